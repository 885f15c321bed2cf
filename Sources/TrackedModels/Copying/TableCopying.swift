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

    /// Fills the target's tables from the source and checks what they hold then.
    ///
    /// - Returns: Each table's rows and checksum, in the order copied.
    mutating func fill(replacing: Bool, progress: (DatabaseCopy.Progress) -> Void) async throws -> [DatabaseCopy.Report.Table] {
        var differences: [SchemaDifference] = []
        for schema in schemas { differences += try await target.differences(of: schema) }
        guard differences.isEmpty else { throw StoreError.schemaMismatch(differences, in: "the target \(targetName)") }
        if replacing {
            for schema in schemas.reversed() { try await target.deleteRows(of: schema) }
        } else {
            try await refuseRows()
        }
        var copied: [TableChecksum] = []
        for (position, (schema, expected)) in zip(schemas, sourceCounts).enumerated() {
            copied.append(try await copy(schema, linkingLater: laterLinks(of: position), progress: progress))
            guard copied.last!.rows == expected else {
                throw CopyError(
                    code: .verificationFailed,
                    message: "table \(schema.name) of the source held \(expected) rows when counted and \(copied.last!.rows) when read, so it changed during the copy; nothing was committed, run the copy again"
                )
            }
        }
        for (schema, checksum) in zip(schemas, copied) {
            try await verify(schema, holds: checksum)
        }
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

    /// The to-one columns of the table at `position` that point at a table not copied before
    /// it: itself (a tree of rows), or a later one (a cycle).
    private func laterLinks(of position: Int) -> [Int] {
        let schema = schemas[position]
        return schema.relationshipColumns.filter { column in
            let target = schema.columns[column].reference!.target._$schema.name
            return schemas[position...].contains { $0.name == target }
        }
    }

    /// Copies a table's rows. Columns in `late` point at rows that may not be there yet: the
    /// rows go in without them, and a second pass over the source sets them once every row is
    /// in, so that a foreign key checked at each statement holds throughout.
    private mutating func copy(_ schema: TableSchema, linkingLater late: [Int], progress: (DatabaseCopy.Progress) -> Void) async throws -> TableChecksum {
        var checksum = TableChecksum()
        let total = sourceCounts.reduce(0, +)
        try await source.forEachBatch(of: schema) { batch in
            try Task.checkCancellation()
            var rows = try batch.map { try Self.checked($0, of: schema) }
            for row in rows { checksum.add(row) }
            for index in rows.indices {
                for column in late { rows[index][column] = .null }
            }
            try await target.insert(rows, into: schema)
            copiedRows += rows.count
            progress(DatabaseCopy.Progress(table: schema.name, copiedRows: copiedRows, totalRows: total))
        }
        if !late.isEmpty {
            try await source.forEachBatch(of: schema) { batch in
                try Task.checkCancellation()
                let links = try batch.map { try Self.checked($0, of: schema) }
                    .filter { row in late.contains { row[$0] != .null } }
                    .map { row in [row[schema.primaryKeyIndex]] + late.map { row[$0] } }
                if !links.isEmpty { try await target.set(late, of: links, in: schema) }
            }
        }
        try await target.advanceKeySequence(of: schema)
        return checksum
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
