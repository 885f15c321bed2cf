import ArgumentParser
import TrackedModels

struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Print rows of the database (read-only).",
        discussion: """
            Without SQL, prints the demo rows (SELECT * FROM rows ORDER BY id), filtered by \
            --where. SQL that would change the database is refused, even when hidden in a \
            multi-statement string, and nothing runs. The file is never created. On PostgreSQL \
            (--db postgres://...) the SQL is PostgreSQL's, one statement, run in a read-only \
            transaction.

            Examples:
              modelctl query --where "count > 0" --format json
              modelctl query "SELECT count(*) AS total FROM rows"
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, json, csv
    }

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "Read-only SQL to run instead of the default query.")
    var sql: String?

    @Option(name: .customLong("where"), help: "A SQL condition on the demo rows, such as \"count > 0\".")
    var condition: String?

    @Option(help: "How to print the rows.")
    var format: Format = .table

    @Option(parsing: .unconditional, help: "Print at most this many rows.")
    var limit: Int?

    func validate() throws {
        if sql != nil, condition != nil {
            throw ValidationError("--where applies to the default query only; put the condition in your SQL instead")
        }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more, not \(limit)") }
    }

    func run() async throws {
        try await reportingErrors(operation: "query", path: options.path) {
            try options.requireExistingDatabase(for: "query")
            // The file's header and application are checked before the query runs, also for a
            // query that would read no page of it (`SELECT 1` on a text file).
            try await options.requireDemoDatabase(for: "query")
            let statement = sql ?? "SELECT * FROM rows" + (condition.map { " WHERE \($0)" } ?? "") + " ORDER BY id"
            let result = try await options.query(statement, limit: limit)
            switch format {
            case .table: print(TableFormatter.table(result), terminator: "")
            case .json: print(TableFormatter.json(result))
            case .csv: print(TableFormatter.csv(result), terminator: "")
            }
        }
    }
}
