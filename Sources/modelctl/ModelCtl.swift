import ArgumentParser
import Foundation

@main
struct ModelCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelctl",
        abstract: "Seed, bump, query, watch, migrate and copy the TrackedModels demo dataset.",
        discussion: """
            The database is --db PATH, else $MODELCTL_DB, else ./model.sqlite. Migrations are the \
            demo ones built into modelctl, or the NNNN_name.sql files of --schemas DIR.

            Exit codes follow sysexits.h: 64 usage, 65 bad data, 66 missing input, 74 I/O error, \
            75 database busy, 77 permission denied, 78 schema mismatch or bad migration set.
            """,
        version: "0.1.0",
        subcommands: [SeedCommand.self, BumpCommand.self, QueryCommand.self, WatchCommand.self, MigrateCommand.self, CopyCommand.self, CheckCommand.self, BenchCommand.self, CommitTimedCommand.self, FanoutWatchCommand.self, FanoutWriteCommand.self]
    )

    static func main() async {
        // A file size limit (ulimit -f) then makes a write fail (SQLite reports the disk full)
        // instead of killing the process mid-command.
        signal(SIGXFSZ, SIG_IGN)
        if let argument = RawArguments.firstInvalidUTF8() {
            FileHandle.standardError.write(Data("modelctl: the argument \(argument) is not valid UTF-8; pass file names and values as UTF-8 text\n".utf8))
            Foundation.exit(64)
        }
        await main(nil)
    }
}
