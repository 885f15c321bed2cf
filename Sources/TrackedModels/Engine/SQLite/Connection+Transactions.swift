/// How a transaction takes its locks.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_transaction.html>
package enum TransactionKind: String, Sendable {
    /// Takes no lock until the first read or write.
    case deferred = "DEFERRED"
    /// Takes the write lock at `BEGIN`, so a busy database fails early instead of half-way.
    case immediate = "IMMEDIATE"
}

extension Connection {
    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// Inside an open transaction, the call nests through a savepoint that is released on
    /// success and rolled back on failure, leaving the outer transaction open.
    package func withTransaction<Result>(_ kind: TransactionKind = .deferred, _ body: () throws -> Result) throws -> Result {
        if isInTransaction {
            return try withSavepoint(body)
        }
        try execute("BEGIN \(kind.rawValue) TRANSACTION")
        let result: Result
        do {
            result = try body()
            try execute("COMMIT TRANSACTION")
        } catch {
            // An explicit rollback: after some errors SQLite already rolled back, and then the
            // ROLLBACK itself fails, which is fine.
            if isInTransaction { try? execute("ROLLBACK TRANSACTION") }
            throw error
        }
        return result
    }

    private func withSavepoint<Result>(_ body: () throws -> Result) throws -> Result {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "trackedmodels_\(savepointDepth)"
        try execute("SAVEPOINT \(name)")
        do {
            let result = try body()
            try execute("RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            try? execute("ROLLBACK TRANSACTION TO SAVEPOINT \(name)")
            try? execute("RELEASE SAVEPOINT \(name)")
            throw error
        }
    }
}
