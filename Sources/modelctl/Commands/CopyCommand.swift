import ArgumentParser
import Foundation
import TrackedModels

struct CopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy the demo database to another file or PostgreSQL database, all or nothing.",
        discussion: """
            Migrates the target (the demo migrations, or those of --schemas DIR for its engine), then \
            copies every row of rows and lists with its key in one transaction, moves the target's key \
            sequences past the keys copied, and reads each table back: the copy commits only if the \
            counts and checksums match the source's. A target whose tables hold rows is refused unless \
            --replace. The source must be at the latest version (modelctl migrate up).

            Example: modelctl copy --from model.sqlite --to postgres://app@localhost/app
            """
    )

    @Option(help: "The database to copy: a file, or a postgres://user:password@host:port/database URL.")
    var from: String

    @Option(help: "The database to copy into: a file (created when missing), or a postgres:// URL.")
    var to: String

    @Option(help: "The folder of NNNN_name.sql migrations for the target, PostgreSQL's in its postgres/ folder (default: ./Schemas when it exists, else the demo ones built in).")
    var schemas: String?

    @Flag(help: "Delete the rows the target's tables hold (in the same transaction) instead of refusing them.")
    var replace = false

    @MainActor func run() async throws {
        let extra = schemas.map { ["--schemas", $0] } ?? []
        let source = try DatabaseOptions.parse(["--db", from] + extra)
        let target = try DatabaseOptions.parse(["--db", to] + extra)
        try await reportingErrors(operation: "copy from", path: source.path) {
            try source.requireExistingDatabase(for: "copy from")
            try source.requireIntactDatabase(for: "copy from")
            try await source.requireDemoDatabase(for: "copy from")
        }
        // Named by the target from here: the source is only read, and was checked above.
        try await reportingErrors(operation: "copy \(source.path) to", path: target.path) {
            try target.refuseFolder(for: "copy to")
            try await target.requireWritableDemoDatabase(for: "copy to", allowingEmpty: true)
            var copy = DatabaseCopy(models: [Row.self, TodoList.self], migrations: try target.migrator())
            copy.replacesRows = replace
            try await run(copy, from: source, to: target)
        }
    }

    /// Copies, with a progress bar on a terminal; a signal rolls the whole copy back (exit
    /// 130/143).
    @MainActor private func run(_ copy: DatabaseCopy, from source: DatabaseOptions, to target: DatabaseOptions) async throws {
        let interruption = Interruption()
        defer { interruption.stop() }
        let start = ContinuousClock.now
        var bar: ProgressBar?
        let copying = Task {
            try await copy.run(from: source.location, to: target.location) { progress in
                let shown = bar ?? ProgressBar(total: progress.totalRows, label: "copying")
                bar = shown
                shown.update(progress.copiedRows)
            }
        }
        interruption.whenSignalled { copying.cancel() }
        let report: DatabaseCopy.Report
        do {
            report = try await copying.value
        } catch is CancellationError where interruption.exitStatus != nil {
            FileHandle.standardError.write(Data("\nmodelctl: copy interrupted; nothing was copied, \(target.path) is as it was\n".utf8))
            throw ExitCode(interruption.exitStatus!)
        }
        bar?.finish(note: "committed")
        for migration in report.appliedMigrations { print("applied \(migration.fileName)") }
        for table in report.tables {
            print("copied \(table.rows) \(table.rows == 1 ? "row" : "rows") of \(table.name), checksum \(table.checksum.prefix(16))")
        }
        let elapsed = ContinuousClock.now - start
        print("copied \(source.path) to \(target.path) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
    }
}
