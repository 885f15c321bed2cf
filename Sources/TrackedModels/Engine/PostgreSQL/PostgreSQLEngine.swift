import Foundation
import Logging

/// The PostgreSQL engine: connects a store to a server, sets the database up, and makes its
/// two halves, the ``PostgreSQLReader`` on the store's actor and the ``PostgreSQLWriter`` on the
/// worker's queue, each with a connection of its own (and the writer's doorbell a third).
///
/// Setting up runs in one transaction under an advisory lock, so that stores opening at once
/// neither race to create the same table nor see a half-made one: missing tables are created
/// when asked, every table is checked against its model (nothing is changed when one does not
/// fit), and the change log's table and each table's trigger are installed or brought up to
/// date.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS>
enum PostgreSQLEngine {
    static func open(_ endpoint: PostgresEndpoint, schemas: [TableSchema], configuration: ModelStore.Configuration, logger: Logger) async throws -> DatabaseEngine {
        // The reader's connection sets the database up; the writer's connects at its first commit.
        let reader = try await PostgresSession.connect(endpoint, role: "trackedmodels reader", logger: logger)
        do {
            try await reader.begin(doing: "setting up the database")
            let installation: PostgreSQLChangeLog.Installation?
            let keys: [ForeignKey]
            var characterLimits: [[Int: Int]] = []
            var castTypes: [[String]] = []
            do {
                _ = try await reader.rows("SELECT pg_advisory_xact_lock($1::bigint)", [.integer(PostgreSQLChangeLog.setupLock)], doing: "setting up the database")
                try await createMissingTables(schemas, if: configuration.createsMissingTables, on: reader)
                // Checked before anything else is written: a database that does not fit is left as it was.
                var differences: [SchemaDifference] = []
                for schema in schemas {
                    let catalog = try await reader.rows(PostgreSQLSchema.columnsSQL, [.text(schema.name)], doing: "reading the schema of \(schema.name)")
                    differences += PostgreSQLSchema.differences(of: schema, catalog: catalog)
                    characterLimits.append(PostgreSQLSchema.characterLimits(of: schema, catalog: catalog))
                    castTypes.append(PostgreSQLSchema.castTypes(of: schema, catalog: catalog))
                }
                guard differences.isEmpty else { throw StoreError.schemaMismatch(differences) }
                installation = configuration.observesExternalChanges ? try await installChangeLog(schemas, on: reader) : nil
                keys = try await foreignKeys(of: schemas, on: reader)
                try await reader.end("COMMIT", doing: "setting up the database")
            } catch {
                try? await reader.end("ROLLBACK", doing: "setting up the database")
                throw error
            }
            var changeLog: PostgreSQLChangeLogReader?
            if let installation {
                let snapshot = try await reader.rows(PostgreSQLChangeLogReader.snapshotSQL, doing: "reading the change log")
                guard case .text(let text) = snapshot.first?.first, let seen = PostgreSQLChangeLogReader.Snapshot(text) else {
                    throw StoreError(code: .engineFailure, message: "PostgreSQL at \(endpoint) gave no snapshot; the change log cannot be read")
                }
                let log = PostgreSQLChangeLogReader(schemas: schemas, installation: installation, seen: seen, staleAfter: configuration.changeLogReaderTimeout)
                // Recorded at once, so that no store prunes what this one has yet to read.
                _ = try await reader.rows(
                    "INSERT INTO \(PostgreSQLChangeLog.readersTable) (id, horizon) VALUES ($1, $2::text::xid8)", [.text(log.id), .text(String(seen.xmin))],
                    doing: "recording the change log position"
                )
                changeLog = log
            }
            return DatabaseEngine(
                reader: PostgreSQLReader(session: reader, schemas: schemas),
                writer: PostgreSQLWriter(
                    session: PostgresPipeline(endpoint: endpoint, role: "trackedmodels writer", logger: logger), tables: schemas, characterLimits: characterLimits, castTypes: castTypes, changeLog: changeLog,
                    actionTargets: ForeignKey.actionTargets(of: keys, schemas: schemas),
                    linkTargets: ForeignKey.linkTargets(of: keys, schemas: schemas),
                    listensForCommits: configuration.wakesOnFileChanges, logger: logger
                ),
                deleteActions: ForeignKey.deleteActions(of: keys, schemas: schemas),
                shortestPollInterval: .milliseconds(250)
            )
        } catch {
            reader.close()
            throw error
        }
    }

    private static func createMissingTables(_ schemas: [TableSchema], if creates: Bool, on session: PostgresSession) async throws {
        guard creates else { return }
        for schema in schemas { try await PostgreSQLSchema.createIfMissing(schema, on: session) }
    }

    /// Creates the log's tables, and each table's trigger function and triggers where they are
    /// missing or differ (a table that gained a column gets a new mask); drops the store's
    /// triggers of other versions (see ``PostgreSQLChangeLog/plan(_:state:)``).
    private static func installChangeLog(_ schemas: [TableSchema], on session: PostgresSession) async throws -> PostgreSQLChangeLog.Installation {
        for statement in PostgreSQLChangeLog.createSQL {
            _ = try await session.rows(statement, doing: "installing the change log")
        }
        let catalogSQL = PostgreSQLChangeLog.catalogSQL(schemas)
        let found = PostgreSQLChangeLog.catalog(from: try await session.rows(catalogSQL, doing: "installing the change log"), count: schemas.count)
        var layouts: [ChangeLogEntries.Layout] = []
        for (schema, state) in zip(schemas, found.tables) {
            let plan = PostgreSQLChangeLog.plan(schema, state: state)
            for statement in plan.statements {
                _ = try await session.rows(statement, doing: "installing the change log of \(schema.name)")
            }
            layouts.append(plan.layout)
        }
        var installed = PostgreSQLChangeLog.catalog(from: try await session.rows(catalogSQL, doing: "installing the change log"), count: schemas.count)
        // Triggers that stay disabled (only the table's owner, another role, may enable them):
        // the first look finds the log changed, and says so on `writeErrors`.
        if zip(schemas, found.tables).contains(where: { !PostgreSQLChangeLog.plan($0, state: $1).disabledTriggers.isEmpty }) {
            installed.fingerprint = .null
            installed.triggersFingerprint = .null
        }
        return PostgreSQLChangeLog.Installation(layouts: layouts, catalog: installed)
    }

    /// The single-column foreign keys of the models' tables.
    ///
    /// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/catalog-pg-constraint.html>
    private static func foreignKeys(of schemas: [TableSchema], on session: PostgresSession) async throws -> [ForeignKey] {
        var keys: [ForeignKey] = []
        for (childTable, schema) in schemas.enumerated() {
            let rows = try await session.rows(
                """
                SELECT target.relname::text, a.attname::text, CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL'
                    WHEN 'd' THEN 'SET DEFAULT' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END
                FROM pg_constraint c
                JOIN pg_class target ON target.oid = c.confrelid
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
                WHERE c.contype = 'f' AND c.conrelid = to_regclass(quote_ident($1)) AND cardinality(c.conkey) = 1
                """,
                [.text(schema.name)], doing: "reading the foreign keys of \(schema.name)"
            )
            for row in rows {
                guard case .text(let target) = row[0], case .text(let column) = row[1], case .text(let onDelete) = row[2] else { continue }
                keys.append(ForeignKey(childTable: childTable, column: column, target: target, onDelete: onDelete))
            }
        }
        return keys
    }
}
