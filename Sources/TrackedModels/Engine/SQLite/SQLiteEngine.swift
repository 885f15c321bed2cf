import Foundation
import Logging

/// The SQLite engine: opens a file (or a private in-memory database) for a store, sets it up,
/// and makes its two halves, the ``SQLiteReader`` on the store's actor and the
/// ``SQLiteWriter`` on the worker's queue, each with a connection of its own.
///
/// A file is put in WAL mode, so that the reader never waits for the writer; the writer
/// commits with `synchronous` set by the store's ``ModelStore/Durability``.
///
/// Related SQLite documentation: <https://www.sqlite.org/wal.html>
enum SQLiteEngine {
    /// The absolute file name SQLite is given for a location.
    static func filename(of location: DatabaseLocation) -> String {
        switch location {
        case .file(let path): Connection.absoluteFilename(path)
        case .inMemory: Connection.inMemoryFilename()
        case .postgres: preconditionFailure("a PostgreSQL location has no SQLite file")
        }
    }

    static func open(
        _ location: DatabaseLocation, filename: String, schemas: [TableSchema], configuration: ModelStore.Configuration, logger: Logger
    ) throws -> DatabaseEngine {
        try translatingSQLiteErrors {
            let reader = try Connection(filename: filename, mode: .readWriteCreate, busyTimeout: configuration.busyTimeout)
            try reader.execute("PRAGMA foreign_keys = ON")
            if configuration.createsMissingTables {
                try reader.withTransaction(.immediate) {
                    for schema in schemas { try schema.createIfMissing(on: reader) }
                }
            }
            // Checked before anything is written: a file that does not fit is left as it was.
            let differences = try schemas.flatMap { try $0.differences(from: reader) }
            guard differences.isEmpty else { throw StoreError.schemaMismatch(differences) }
            if case .file = location {
                try reader.execute("PRAGMA journal_mode = WAL")
            }

            let writer = try Connection(filename: filename, mode: .readWrite, busyTimeout: configuration.busyTimeout)
            try writer.execute("PRAGMA synchronous = \(configuration.durability.synchronousPragma)")
            try writer.execute("PRAGMA foreign_keys = ON")
            var changeLog: ChangeLogReader?
            if configuration.observesExternalChanges {
                let layouts = try ChangeLog.install(on: reader, schemas: schemas)
                changeLog = try ChangeLogReader(
                    schemas: schemas, layouts: layouts,
                    retention: configuration.changeLogRetention, connection: writer
                )
            }
            let walFile = location == .inMemory || !configuration.wakesOnFileChanges ? nil : filename + "-wal"
            let keys = try foreignKeys(of: schemas, on: reader)
            return DatabaseEngine(
                reader: SQLiteReader(connection: reader, schemas: schemas),
                writer: SQLiteWriter(
                    connection: writer, tables: schemas, changeLog: changeLog, walFile: walFile,
                    actionTargets: ForeignKey.actionTargets(of: keys, schemas: schemas),
                    linkTargets: ForeignKey.linkTargets(of: keys, schemas: schemas), logger: logger
                ),
                deleteActions: ForeignKey.deleteActions(of: keys, schemas: schemas)
            )
        }
    }
}

extension SQLiteEngine {
    /// The foreign keys of the models' tables, read once at open.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/foreignkeys.html#fk_actions>
    static func foreignKeys(of schemas: [TableSchema], on connection: Connection) throws -> [ForeignKey] {
        var keys: [ForeignKey] = []
        for (childTable, schema) in schemas.enumerated() {
            let rows = try connection.makeStatement("SELECT \"table\", \"from\", on_delete FROM pragma_foreign_key_list(?)").rows([.text(schema.name)])
            for row in rows {
                guard case .text(let target) = row[0], case .text(let column) = row[1], case .text(let onDelete) = row[2] else { continue }
                keys.append(ForeignKey(childTable: childTable, column: column, target: target, onDelete: onDelete.uppercased()))
            }
        }
        return keys
    }
}

extension ModelStore.Durability {
    /// The writer's `synchronous` setting: WAL with NORMAL survives a killed process, FULL
    /// also power loss.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/pragma.html#pragma_synchronous>
    fileprivate var synchronousPragma: String {
        switch self {
        case .processCrash: "NORMAL"
        case .full: "FULL"
        }
    }
}

/// The reading half of the SQLite engine: the store's own connection, used on its actor. A
/// read of a local file is answered at once.
final class SQLiteReader: EngineReader {
    private let connection: Connection
    private let schemas: [TableSchema]
    /// Statements run so far: how tests count the reads a feature costs.
    private(set) var statementsRun = 0
    /// Each table's declaration, for reads over it as the store shows it, read at first use.
    private var overlayViews: [Int: TableOverlayView] = [:]

    init(connection: Connection, schemas: [TableSchema]) {
        self.connection = connection
        self.schemas = schemas
    }

    var answersAtOnce: Bool { true }

    func answerNow(_ reads: [DatabaseRead]) throws -> [[[SQLValue]]] {
        try reads.map { read in
            switch read {
            case .query(let query, let limit): try rows(matching: query, limit: limit)
            case .count(let query): [[.integer(Int64(try count(matching: query)))]]
            case .rows(let table, let keys): try keys.compactMap { try row(table: table, key: $0) }
            case .native(let table, let sql, let arguments, let overlay): try rows(table: table, nativeSQL: sql, arguments: arguments, overlay: overlay)
            }
        }
    }

    func answer(_ reads: [DatabaseRead]) async throws -> [[[SQLValue]]] {
        try answerNow(reads)
    }

    func parameter(_ index: Int) -> String { "?\(index)" }

    private func rows(matching query: CompiledQuery, limit: Int?) throws -> [[SQLValue]] {
        let select = SQLiteDialect.select(query, limit: limit)
        statementsRun += 1
        return try translatingSQLiteErrors { try connection.cachedStatement(select.sql).rows(select.arguments) }
    }

    private func count(matching query: CompiledQuery) throws -> Int {
        let count = SQLiteDialect.count(query)
        statementsRun += 1
        return try translatingSQLiteErrors {
            guard case .integer(let total) = try connection.scalar(count.sql, count.arguments) else { return 0 }
            return Int(total)
        }
    }

    private func row(table: Int, key: SQLValue) throws -> [SQLValue]? {
        statementsRun += 1
        return try translatingSQLiteErrors { try connection.cachedStatement(schemas[table].selectByKeySQL).rows([key]).first }
    }

    /// Where the overlay has rows, the statement reads the table as the store shows it: see
    /// ``TableOverlayView``.
    private func rows(table: Int, nativeSQL sql: String, arguments: [SQLValue], overlay: TableOverlay) throws -> [[SQLValue]] {
        statementsRun += 1
        return try translatingSQLiteErrors {
            guard !overlay.isEmpty else { return try connection.cachedStatement(sql).rows(arguments) }
            let view = try overlayViews[table] ?? TableOverlayView(schema: schemas[table], on: connection)
            overlayViews[table] = view
            // Made for this read alone: the view it reads exists only while it runs.
            return try view.reading(overlay, on: connection) { try connection.makeStatement(sql).rows(arguments) }
        }
    }
}
