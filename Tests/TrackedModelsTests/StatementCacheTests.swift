import Testing
@testable import TrackedModels

@Suite struct StatementCacheTests {
    @Test func theLeastRecentlyUsedStatementIsDroppedPastTheCapacity() throws {
        let connection = try Connection(filename: Connection.inMemoryFilename(), mode: .readWriteCreate, busyTimeout: .seconds(1))
        var cache = StatementCache<Int>(capacity: 3)
        var compiled = 0
        func statement(_ value: Int) throws -> Statement {
            try cache.statement(for: value) {
                compiled += 1
                return try connection.makeStatement("SELECT \(value)")
            }
        }
        let first = try statement(1)
        _ = try statement(2)
        _ = try statement(3)
        #expect(try statement(1) === first)   // used again: now the most recent
        _ = try statement(4)                  // evicts 2, the least recently used
        #expect(cache.count == 3)
        #expect(try statement(1) === first)
        _ = try statement(2)
        #expect(compiled == 5)
        #expect(cache.count == 3)
    }

    @Test func aConnectionKeepsABoundedNumberOfStatements() throws {
        let connection = try Connection(filename: Connection.inMemoryFilename(), mode: .readWriteCreate, busyTimeout: .seconds(1))
        for value in 0..<1_000 { _ = try connection.scalar("SELECT \(value)") }
        #expect(connection.cachedStatementCount <= 64)
    }
}
