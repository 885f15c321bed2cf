/// The part of a ``DatabaseCopy`` inside the target's transaction: check the target, empty it
/// when asked, stream each table across, and read every table back.
struct TableCopying {
    let schemas: [TableSchema]
    let source: any CopySource
    let target: any CopyTarget
    /// How messages name the target.
    let targetName: String
    /// The source's row counts, by table, read in its snapshot.
    let sourceCounts: [Int]
    private var copiedRows = 0

    init(schemas: [TableSchema], source: any CopySource, target: any CopyTarget, targetName: String, sourceCounts: [Int]) {
        self.schemas = schemas
        self.source = source
        self.target = target
        self.targetName = targetName
        self.sourceCounts = sourceCounts
    }

    /// Fills the target's tables from the source and checks what they hold then. Every table's
    /// rows go in first, without the links that point at a table not filled before it (itself,
    /// or a later one of a cycle); a second pass over the source then sets those links, once
    /// every row is there. The key sequences move last, once everything checked out (a
    /// sequence's move is not rolled back).
    ///
    /// - Returns: Each table's rows and checksum, in the order copied.
    mutating func fill(replacing: Bool, progress: (DatabaseCopy.Progress) -> Void) async throws -> [DatabaseCopy.Report.Table] {
        var differences: [SchemaDifference] = []
        for schema in schemas { differences += try await target.differences(of: schema) }
        guard differences.isEmpty else { throw StoreError.schemaMismatch(differences, in: "the target \(targetName)") }
        let late = schemas.indices.map(laterLinks(of:))
        if replacing {
            // Links that may point forward go first, so that no row points at one deleted before it.
            for (schema, columns) in zip(schemas, late) where !columns.isEmpty { try await target.clear(columns, of: schema) }
            for schema in schemas.reversed() { try await target.deleteRows(of: schema) }
        } else {
            try await refuseRows()
        }
        var copied: [TableChecksum] = []
        for (schema, (columns, expected)) in zip(schemas, zip(late, sourceCounts)) {
            copied.append(try await copy(schema, withholding: columns, progress: progress))
            guard copied.last!.rows == expected else {
                throw CopyError(
                    code: .verificationFailed,
                    message: "table \(schema.name) of the source held \(expected) rows when counted and \(copied.last!.rows) when read, so it changed during the copy; nothing was committed, run the copy again"
                )
            }
        }
        for (schema, columns) in zip(schemas, late) where !columns.isEmpty {
            try await link(schema, columns)
        }
        for (schema, checksum) in zip(schemas, copied) {
            try await verify(schema, holds: checksum)
        }
        try source.checkConsistent()
        try Task.checkCancellation()
        for schema in schemas { try await target.advanceKeySequence(of: schema) }
        return zip(schemas, copied).map { DatabaseCopy.Report.Table(name: $0.name, rows: $1.rows, checksum: $1.hex) }
    }

    private func refuseRows() async throws {
        for schema in schemas {
            let rows = try await target.rowCount(of: schema)
            guard rows == 0 else {
                throw CopyError(
                    code: .targetNotEmpty,
                    message: "table \(schema.name) of the target \(targetName) already holds \(rows) row\(rows == 1 ? "" : "s"); nothing was copied. Replace them (--replace, or replacesRows), or copy to an empty database"
                )
            }
        }
    }

    /// The to-one columns of the table at `position` that point at a table not filled before
    /// it: itself (a tree of rows), or a later one (a cycle).
    private func laterLinks(of position: Int) -> [Int] {
        let schema = schemas[position]
        return schema.relationshipColumns.filter { column in
            let target = schema.columns[column].reference!.target._$schema.name
            return schemas[position...].contains { $0.name == target }
        }
    }

    /// Copies a table's rows, the `withheld` columns left NULL (``link(_:_:)`` sets them).
    private mutating func copy(_ schema: TableSchema, withholding withheld: [Int], progress: (DatabaseCopy.Progress) -> Void) async throws -> TableChecksum {
        var checksum = TableChecksum()
        let total = sourceCounts.reduce(0, +)
        try await source.forEachBatch(of: schema) { batch in
            try Task.checkCancellation()
            var rows = try batch.map { try Self.checked($0, of: schema) }
            for row in rows { checksum.add(row) }
            for index in rows.indices {
                for column in withheld { rows[index][column] = .null }
            }
            try await target.insert(rows, into: schema)
            copiedRows += rows.count
            progress(DatabaseCopy.Progress(table: schema.name, copiedRows: copiedRows, totalRows: total))
        }
        return checksum
    }

    /// Sets the links a first pass withheld, reading the source again.
    private func link(_ schema: TableSchema, _ columns: [Int]) async throws {
        try await source.forEachBatch(of: schema) { batch in
            try Task.checkCancellation()
            let links = try batch.map { try Self.checked($0, of: schema) }
                .filter { row in columns.contains { row[$0] != .null } }
                .map { row in [row[schema.primaryKeyIndex]] + columns.map { row[$0] } }
            if !links.isEmpty { try await target.set(columns, of: links, in: schema) }
        }
    }

    private func verify(_ schema: TableSchema, holds copied: TableChecksum) async throws {
        var readBack = TableChecksum()
        try await target.forEachBatch(of: schema) { batch in
            try Task.checkCancellation()
            for row in batch { readBack.add(try Self.checked(row, of: schema)) }
        }
        guard readBack != copied else { return }
        throw CopyError(
            code: .verificationFailed,
            message: "read back, table \(schema.name) of the target \(targetName) holds \(readBack.rows) rows (checksum \(readBack.hex.prefix(16))) where \(copied.rows) were copied (checksum \(copied.hex.prefix(16))); nothing was committed. The target changed a value as it stored it: check its column types against the source's"
        )
    }

    /// A row as its model reads it: an integer in a real column becomes a real (as a `Double`
    /// property reads it); anything the model cannot read is refused, naming the row.
    static func checked(_ row: [SQLValue], of schema: TableSchema) throws -> [SQLValue] {
        var checked = row
        for (index, column) in schema.columns.enumerated() {
            switch (row[index], column.type) {
            case (.null, _) where column.isOptional && !column.isPrimaryKey,
                 (.integer, .integer), (.text, .text), (.blob, .blob):
                continue
            case (.integer(let integer), .real):
                checked[index] = .real(Double(integer))
            case (.real(let real), .real) where !real.isNaN:
                continue
            default:
                let value: String = switch row[index] {
                case .null: "NULL"
                case .real(let real) where real.isNaN: "NaN"
                case .integer: "an integer"
                case .real: "a real"
                case .text: "text"
                case .blob: "a blob"
                }
                throw CopyError(
                    code: .valueNotCopyable,
                    message: "row \(row[schema.primaryKeyIndex]) of table \(schema.name) holds \(value) in column \(column.name), which \(column.property) (\(column.isOptional ? "optional " : "")\(column.type.rawValue)) cannot hold; nothing was copied. Fix the row in the source, then copy again"
                )
            }
        }
        return checked
    }
}
