import ArgumentParser

@main
struct ModelCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelctl",
        abstract: "Seed, bump, query, watch and migrate the TrackedModels demo dataset.",
        discussion: """
            The database is --db PATH, else $MODELCTL_DB, else ./model.sqlite. Migrations are the \
            demo ones built into modelctl, or the NNNN_name.sql files of --schemas DIR.

            Exit codes follow sysexits.h: 64 usage, 65 bad data, 66 missing input, 74 I/O error, \
            75 database busy, 77 permission denied, 78 schema mismatch or bad migration set.
            """,
        version: "0.1.0",
        subcommands: [SeedCommand.self, BumpCommand.self, QueryCommand.self, WatchCommand.self, MigrateCommand.self, BenchCommand.self, CommitTimedCommand.self]
    )
}
