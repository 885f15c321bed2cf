import Foundation
import PostgresTestSupport
import PropertyBased
import Testing
@testable import TrackedModels

/// A shelf: a self-reference (`parent`, whose to-many `children` nullifies), the books on it
/// (cascade) and the books held for it (deny).
@Tracked(table: "shelves")
final class Shelf {
    @PrimaryKey var id: Int64?
    /// The number the program gave it, which finds it again in any store.
    var serial: Int
    var name: String
    @Column("parent_id") var parent: Shelf?
    @Relationship(inverse: \Shelf.parent) var children: [Shelf] = []
    @Relationship(deleteRule: .cascade, inverse: \Book.shelf) var books: [Book] = []
    @Relationship(deleteRule: .deny, inverse: \Book.hold) var holds: [Book] = []
}

/// A book: on a shelf, held for a shelf, and kept by a shelf, which has no to-many of the books
/// it keeps: what deleting that shelf does to them is what the database declares
/// (`ON DELETE SET NULL`), and the store applies it as it applies a delete rule.
@Tracked(table: "books")
final class Book {
    @PrimaryKey var id: Int64?
    var serial: Int
    var title: String
    @Column("shelf_id") var shelf: Shelf?
    @Column("hold_id") var hold: Shelf?
    @Column("keeper_id") var keeper: Shelf?
}

/// The relationships across two model tables, checked against a reference model after every
/// step of generated programs, on both engines: to-ones and their to-manys between two tables
/// and within one, every delete rule (one declared only by the database), keys the program supplies (negative) and keys the
/// database assigns, to-manys assigned, transactions that throw, discarding every pending
/// change, flushes, reopening, and letting go of the store without `close()`. After
/// every step each object's values and relationships (both directions), counts, a fetch through
/// the to-one and a live list of it must agree with the reference; after a flush, the database.
@MainActor
@Suite(.serialized) struct ShelvesReferenceModelTests {
    /// A fifth of the main reference-model test's budget (`TRACKEDMODELS_REFERENCE_PROGRAMS`).
    static let programs = max(10, ReferenceModelTests.programs / 5)
    static let step = zip(Gen.int(in: 0...20), Gen.uint64(in: 0...(1 << 40)), Gen.uint64(in: 0...(1 << 40)))
        .map { Step(kind: $0, a: $1, b: $2) }
    static let program = step.array(of: 1...30)

    @Test(arguments: TestEngine.allCases)
    func relationshipsAcrossTwoTablesAgreeWithTheReference(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        let programs = engine == .sqlite ? Self.programs : max(2, Self.programs / 5)
        var failed = false
        await propertyCheck(count: programs, input: Self.program) { steps in
            guard !failed else { return }
            if case .diverged = try await Self.run(engine: engine, steps: steps) { failed = true }
        }
    }

    /// Replays a program printed as `[(kind, a, b), ...]`, in `TRACKEDMODELS_SHELVES_REPLAY`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TRACKEDMODELS_SHELVES_REPLAY"] != nil)) func replay() async throws {
        let numbers = try #require(ProcessInfo.processInfo.environment["TRACKEDMODELS_SHELVES_REPLAY"]).split { !$0.isNumber }.compactMap { UInt64($0) }
        let steps = stride(from: 0, to: numbers.count - 2, by: 3).map { Step(kind: Int(numbers[$0]), a: numbers[$0 + 1], b: numbers[$0 + 2]) }
        let engine = TestEngine(rawValue: ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_ENGINE"] ?? "sqlite") ?? .sqlite
        try await Self.run(engine: engine, steps: steps)
    }

    enum Outcome { case agreed, diverged }

    @discardableResult
    static func run(engine: TestEngine, steps: [Step]) async throws -> Outcome {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let harness = ShelvesHarness(engine: engine, database: database)
        do {
            try await harness.open()
            try await harness.check(afterFlush: true)
            for step in steps {
                try await harness.run(step)
                try await harness.check(afterFlush: false)
            }
            try await harness.reopen()
            try await harness.check(afterFlush: true)
        } catch {
            Issue.record("""
                \(error is Divergence ? "" : "threw: ")\(error)
                engine: \(engine), program [\(steps.map(\.description).joined(separator: ", "))]:
                \(harness.transcript.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n"))
                """)
            try? await harness.store?.close()
            return .diverged
        }
        try? await harness.store?.close()
        return .agreed
    }
}

/// Runs one program of ``ShelvesReferenceModelTests`` against a store and the reference.
@MainActor
final class ShelvesHarness {
    /// A shelf or a book, by the number the program gave it when it made it.
    typealias Ref = Int

    struct ShelfRow: Equatable {
        var name: String
        var parent: Ref?
    }

    struct BookRow: Equatable {
        var title: String
        var shelf: Ref?
        var hold: Ref?
        var keeper: Ref?
    }

    /// A book's to-one the program points somewhere.
    enum BookLink: String {
        case shelf, hold, keeper
    }

    /// What the store must show.
    struct Model: Equatable {
        var shelves: [Ref: ShelfRow] = [:]
        var books: [Ref: BookRow] = [:]
    }

    let engine: TestEngine
    let database: String
    private(set) var store: ModelStore?
    private var reference = Model()
    /// What the database holds: the reference as of the last flush (or reopening).
    private var committed = Model()
    /// The objects of the rows the reference holds.
    private var shelves: [Ref: Shelf] = [:]
    private var books: [Ref: Book] = [:]
    private var lastRef = 0
    /// Whether the program inserted its many books (once at most).
    private var insertedMany = false
    /// More books than SQLite binds parameters in one statement (32,766 by default).
    private static let many = 33_000
    private var live: FetchedResults<Book>? {
        didSet { told = live?.keys; listening = live?.onChange { [unowned self] in told = told?.applying($0, shown: live?.keys ?? []) } }
    }
    /// The live list's keys as its `onChange` differences tell them, applied in turn from its
    /// keys when made (nil once one does not apply): a burst of thousands of rows included.
    private var told: [Int64?]?
    private var listening: FetchedResults<Book>.Subscription?
    private(set) var transcript: [String] = []
    private static let names = ["A", "B", "C"]

    init(engine: TestEngine, database: String) {
        self.engine = engine
        self.database = database
    }

    private var opened: ModelStore {
        get throws {
            guard let store else { throw Divergence(message: "the store is not open") }
            return store
        }
    }

    private func note(_ line: String) {
        transcript.append(line)
    }

    func open() async throws {
        if !madeTables {
            try await engine.sql(database, Self.tablesSQL(engine))
            madeTables = true
        }
        let store = try await engine.open(database, models: [Shelf.self, Book.self])
        self.store = store
        live = try await store.async.results(for: Self.onShelfA)
    }

    private var madeTables = false

    /// The tables as the store would make them, but that `books.keeper_id` references
    /// `shelves` with `ON DELETE SET NULL`.
    private static func tablesSQL(_ engine: TestEngine) -> String {
        let (shelves, books) = switch engine {
        case .sqlite: (Shelf._$schema.createTableSQL, Book._$schema.createTableSQL)
        case .postgres: (PostgreSQLSchema.createTableSQL(Shelf._$schema), PostgreSQLSchema.createTableSQL(Book._$schema))
        }
        let keeper = engine == .sqlite ? "\"keeper_id\" INTEGER" : "\"keeper_id\" BIGINT"
        precondition(books.contains(keeper), "books declares keeper_id otherwise: \(books)")
        return "\(shelves); \(books.replacingOccurrences(of: keeper, with: "\(keeper) REFERENCES \"shelves\" (\"id\") ON DELETE SET NULL"));"
    }

    private static let onShelfA = FetchDescriptor<Book>(predicate: #Predicate { $0.shelf?.name == "A" }, sortBy: [SortDescriptor(\.id)])

    // MARK: - Steps

    func run(_ step: Step) async throws {
        switch step.kind {
        case 0, 1: try insertShelf(step.a, step.b)
        case 2, 3: try insertBook(step.a, step.b)
        case 4: relateBook(step.a, step.b, step.a / 1_024 % 3 == 0 ? .keeper : .shelf)
        case 5: relateBook(step.a, step.b, .hold)
        case 6: relateParent(step.a, step.b)
        case 7: assignBooks(step.a, step.b)
        case 8: try await deleteShelf(step.a)
        case 9: try deleteBook(step.a)
        case 10: rename(step.a, step.b)
        case 11, 12: try transaction(step.a, step.b)
        case 13: try await flush()
        case 14: try await reopen()
        case 15: try await deleteAllBooks()
        case 16: try await discardPending()
        case 17: try await (engine == .sqlite ? releaseStore() : reopen())
        case 19: try deleteAllBooksInAThrowingTransaction()
        case 20: try await copyAway(step.a)
        default: try await insertManyBooks(step.a, step.b)
        }
    }

    private func pick<Value>(_ map: [Ref: Value], _ seed: UInt64) -> (Ref, Value)? {
        let refs = map.keys.sorted()
        guard !refs.isEmpty else { return nil }
        let ref = refs[Int(seed % UInt64(refs.count))]
        return (ref, map[ref]!)
    }

    /// A shelf to point at: one the program holds, or (a fourth of the time) none.
    private func target(_ seed: UInt64) -> (Ref, Shelf)? {
        seed % 4 == 0 ? nil : pick(shelves, seed / 4)
    }

    /// A new number; a supplied key is its negation (the database assigns positive keys).
    private func newRef() -> Ref {
        lastRef += 1
        return lastRef
    }

    private func insertShelf(_ a: UInt64, _ b: UInt64) throws {
        let ref = newRef()
        let keyed = a % 2 == 0
        let parent = target(b)
        let shelf = Shelf(id: keyed ? -Int64(ref) : nil, serial: ref, name: Self.names[Int(a / 2 % 3)], parent: parent?.1)
        note("insert shelf \(ref)\(keyed ? " keyed \(-ref)" : "") named \(shelf.name), parent \(parent.map { "\($0.0)" } ?? "nil")")
        try opened.insert(shelf)
        shelves[ref] = shelf
        reference.shelves[ref] = ShelfRow(name: shelf.name, parent: parent?.0)
        // Now and then a book made before it (pending, often) is kept by it at once: the link
        // merges into the book's earlier write, ahead of this shelf's insert.
        if a / 8 % 3 == 0, let (book, object) = pick(books, b / 3) {
            note("book \(book).keeper = shelf \(ref)")
            object.keeper = shelf
            reference.books[book]!.keeper = ref
        }
    }

    private func insertBook(_ a: UInt64, _ b: UInt64) throws {
        let ref = newRef()
        let keyed = a % 2 == 0
        let shelf = target(b)
        let hold = target(b / 7 + a)
        let keeper = target(b / 49 + a / 3)
        let book = Book(id: keyed ? -Int64(ref) : nil, serial: ref, title: a / 2 % 2 == 0 ? "x" : "y", shelf: shelf?.1, hold: hold?.1, keeper: keeper?.1)
        note("insert book \(ref)\(keyed ? " keyed \(-ref)" : ""), shelf \(shelf.map { "\($0.0)" } ?? "nil"), hold \(hold.map { "\($0.0)" } ?? "nil"), keeper \(keeper.map { "\($0.0)" } ?? "nil")")
        try opened.insert(book)
        books[ref] = book
        reference.books[ref] = BookRow(title: book.title, shelf: shelf?.0, hold: hold?.0, keeper: keeper?.0)
    }

    /// More books than SQLite binds parameters in one statement, inserted as one sequence on
    /// one shelf (or none), each waiting for the key the database assigns: every read sees
    /// them all while they are pending (checked), the commit keeps every link (flushed and
    /// checked against the file), and then every book is deleted, so that the program's later
    /// steps stay quick. On SQLite, whose limit it is (and once per program at most).
    private func insertManyBooks(_ a: UInt64, _ b: UInt64) async throws {
        guard engine == .sqlite, !insertedMany, a % 8 == 0 else { return }
        insertedMany = true
        let shelf = target(b)
        let refs = (0..<Self.many).map { _ in newRef() }
        note("insert(contentsOf:) books \(refs[0])…\(refs[refs.count - 1]), shelf \(shelf.map { "\($0.0)" } ?? "nil")")
        let many = refs.map { Book(id: nil, serial: $0, title: "m", shelf: shelf?.1, hold: nil, keeper: nil) }
        try opened.insert(contentsOf: many)
        for (ref, book) in zip(refs, many) {
            books[ref] = book
            reference.books[ref] = BookRow(title: "m", shelf: shelf?.0, hold: nil)
        }
        try await check(afterFlush: false)
        try await flush()
        try await check(afterFlush: true)
        try await deleteAllBooks()
    }

    private func relateBook(_ a: UInt64, _ b: UInt64, _ link: BookLink) {
        guard let (ref, book) = pick(books, a) else { return }
        let shelf = target(b)
        note("book \(ref).\(link) = \(shelf.map { "shelf \($0.0)" } ?? "nil")")
        switch link {
        case .shelf:
            book.shelf = shelf?.1
            reference.books[ref]!.shelf = shelf?.0
        case .hold:
            book.hold = shelf?.1
            reference.books[ref]!.hold = shelf?.0
        case .keeper:
            book.keeper = shelf?.1
            reference.books[ref]!.keeper = shelf?.0
        }
    }

    private func relateParent(_ a: UInt64, _ b: UInt64) {
        guard let (ref, shelf) = pick(shelves, a) else { return }
        let parent = target(b)
        note("shelf \(ref).parent = \(parent.map { "shelf \($0.0)" } ?? "nil")")
        shelf.parent = parent?.1
        reference.shelves[ref]!.parent = parent?.0
    }

    /// `shelf.books = [...]`: the books that leave point at nothing, those that join at it.
    private func assignBooks(_ a: UInt64, _ b: UInt64) {
        guard let (ref, shelf) = pick(shelves, a) else { return }
        let chosen = books.keys.sorted().filter { (UInt64($0) &* 2_654_435_761 ^ b) % 3 == 0 }
        note("shelf \(ref).books = \(chosen)")
        shelf.books = chosen.map { books[$0]! }
        for (book, row) in reference.books {
            if chosen.contains(book) {
                reference.books[book]!.shelf = ref
            } else if row.shelf == ref {
                reference.books[book]!.shelf = nil
            }
        }
    }

    /// Whether an object's insert waits for the key the database assigns.
    private func waitsForKey(_ object: some TrackedModel) -> Bool {
        object._$tracking.insertRequest != nil
    }

    /// Deletes a shelf with its rules: its children point at nothing, its books go, and it is
    /// refused while books are held for it (those it deletes aside) or when a row the rules
    /// reach, or the shelf itself, waits for its key.
    private func deleteShelf(_ a: UInt64) async throws {
        guard let (ref, shelf) = pick(shelves, a) else { return }
        note("delete shelf \(ref)")
        let children = reference.shelves.filter { $0.value.parent == ref && $0.key != ref }.map(\.key)
        let onIt = reference.books.filter { $0.value.shelf == ref }.map(\.key)
        let held = reference.books.filter { $0.value.hold == ref && $0.value.shelf != ref }.map(\.key)
        // The database's rule comes after the model's: it reaches the books the shelf keeps
        // that its cascade leaves.
        let kept = reference.books.filter { $0.value.keeper == ref && $0.value.shelf != ref }.map(\.key)
        let expected: StoreError.Code? = if waitsForKey(shelf) || children.contains(where: { waitsForKey(shelves[$0]!) }) || onIt.contains(where: { waitsForKey(books[$0]!) }) {
            .notAttached
        } else if !held.isEmpty {
            .deleteDenied
        } else if kept.contains(where: { waitsForKey(books[$0]!) }) {
            .notAttached
        } else {
            nil
        }
        do {
            if engine == .sqlite { try opened.delete(shelf) } else { try await opened.async.delete(shelf) }
            if let expected { throw Divergence(message: "deleting shelf \(ref) succeeded; expected \(expected)") }
        } catch let error as StoreError {
            guard error.code == expected else { throw Divergence(message: "deleting shelf \(ref) threw \(error); expected \(expected.map { "\($0)" } ?? "success")") }
            return
        }
        for child in children { reference.shelves[child]!.parent = nil }
        for book in kept { reference.books[book]!.keeper = nil }
        for book in onIt {
            reference.books[book] = nil
            books[book] = nil
        }
        reference.shelves[ref] = nil
        shelves[ref] = nil
    }

    private func deleteBook(_ a: UInt64) throws {
        guard let (ref, book) = pick(books, a) else { return }
        note("delete book \(ref)")
        do {
            try opened.delete(book)
            if waitsForKey(book) { throw Divergence(message: "deleting book \(ref), which waits for its key, succeeded") }
        } catch let error as StoreError where error.code == .notAttached && waitsForKey(book) {
            return
        }
        reference.books[ref] = nil
        books[ref] = nil
    }

    private func deleteAllBooks() async throws {
        note("deleteAll books")
        if engine == .sqlite { try opened.deleteAll(Book.self) } else { try await opened.async.deleteAll(Book.self) }
        reference.books = [:]
        books = [:]
    }

    /// A transaction that deletes every book (their objects, and books waiting for the key
    /// the database assigns, among them: no delete rule reads them) and throws: every book
    /// comes back as it was, attached.
    private func deleteAllBooksInAThrowingTransaction() throws {
        struct Thrown: Error {}
        note("transaction { deleteAll books } (throws)")
        do {
            try opened.transaction {
                try opened.deleteAll(Book.self)
                throw Thrown()
            }
        } catch is Thrown {}
    }

    private func rename(_ a: UInt64, _ b: UInt64) {
        if b % 2 == 0, let (ref, shelf) = pick(shelves, a) {
            let name = Self.names[Int(b / 2 % 3)]
            note("shelf \(ref).name = \(name)")
            shelf.name = name
            reference.shelves[ref]!.name = name
        } else if let (ref, book) = pick(books, a) {
            let title = b / 2 % 2 == 0 ? "x" : "y"
            note("book \(ref).title = \(title)")
            book.title = title
            reference.books[ref]!.title = title
        }
    }

    /// A transaction of up to three inserts, relations and renames that throws half the time:
    /// then nothing it did stays (objects it inserted are let go of).
    private func transaction(_ a: UInt64, _ b: UInt64) throws {
        struct Thrown: Error {}
        let throwsAtEnd = a % 2 == 0
        note("transaction {\(throwsAtEnd ? " (throws)" : "")")
        let before = (reference, shelves, books, lastRef)
        do {
            try opened.transaction {
                var seed = b
                for _ in 0..<Int(a / 2 % 3 + 1) {
                    let (x, y) = (seed % 7, seed / 7)
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1
                    switch x {
                    case 0: try insertShelf(y, seed)
                    case 1: try insertBook(y, seed)
                    case 2: relateBook(y, seed, y / 1_024 % 3 == 0 ? .keeper : .shelf)
                    case 3: relateBook(y, seed, .hold)
                    case 4: relateParent(y, seed)
                    case 5: assignBooks(y, seed)
                    default: rename(y, seed)
                    }
                }
                if throwsAtEnd { throw Thrown() }
            }
        } catch is Thrown {
            (reference, shelves, books, _) = before
        }
        note("}")
    }

    private func flush() async throws {
        note("flush")
        try await opened.flush()
        committed = reference
        try await checkDatabase()
    }

    /// Flushes, then copies the database (``DatabaseCopy``) to a new one of either engine
    /// whose every link is a foreign key, checked as each statement ends: parents that come
    /// after their children, and shelves that are each other's parents, included. The copy must hold what the database holds,
    /// and a shelf inserted there through a store gets a key no copied shelf has.
    private func copyAway(_ a: UInt64) async throws {
        try await flush()
        let targetEngine: TestEngine = a % 3 == 0 && PostgresServer.isEnabled ? .postgres : .sqlite
        note("copy to a new \(targetEngine) database whose links are foreign keys")
        let directory = try TemporaryDirectory()
        let target = try await targetEngine.makeDatabase(in: directory)
        try await targetEngine.sql(target, Self.foreignKeyedTablesSQL(targetEngine))
        let report = try await DatabaseCopy(models: [Shelf.self, Book.self]).run(from: engine.location(database), to: targetEngine.location(target))
        guard report.tables.map(\.name) == ["shelves", "books"], report.tables.map(\.rows) == [committed.shelves.count, committed.books.count] else {
            throw Divergence(message: "the copy reports \(report.tables.map { "\($0.name): \($0.rows)" }); the database holds \(committed.shelves.count) shelves and \(committed.books.count) books")
        }
        try await checkDatabase(targetEngine, target)
        let keys = Set(try await targetEngine.sql(target, "SELECT id FROM shelves").split(separator: "\n").compactMap { Int64($0) })
        let store = try await targetEngine.open(target, models: [Shelf.self, Book.self])
        let shelf = Shelf(id: nil, serial: 0, name: "new", parent: nil)
        try store.insert(shelf)
        try await store.close()
        guard let key = shelf.id, !keys.contains(key) else {
            throw Divergence(message: "a shelf inserted into the copy got key \(shelf.id.map { "\($0)" } ?? "nil"), which a copied shelf has")
        }
    }

    /// The tables as the store makes them, with every link a foreign key.
    private static func foreignKeyedTablesSQL(_ engine: TestEngine) -> String {
        let (shelves, books) = switch engine {
        case .sqlite: (Shelf._$schema.createTableSQL, Book._$schema.createTableSQL)
        case .postgres: (PostgreSQLSchema.createTableSQL(Shelf._$schema), PostgreSQLSchema.createTableSQL(Book._$schema))
        }
        let type = engine == .sqlite ? "INTEGER" : "BIGINT"
        func referencing(_ sql: String, _ columns: [String]) -> String {
            columns.reduce(sql) { sql, column in
                let declared = "\"\(column)\" \(type)"
                precondition(sql.contains(declared), "\(column) is declared otherwise: \(sql)")
                return sql.replacingOccurrences(of: declared, with: "\(declared) REFERENCES \"shelves\" (\"id\")")
            }
        }
        return "\(referencing(shelves, ["parent_id"])); \(referencing(books, ["shelf_id", "hold_id", "keeper_id"]));"
    }

    /// Gives up every pending change: the objects of what is committed show it again, those
    /// inserted since are let go of, and the rows whose delete is discarded are fetched again.
    private func discardPending() async throws {
        note("discard every pending change")
        try opened.discardPendingChanges()
        reference = committed
        shelves = shelves.filter { committed.shelves[$0.key] != nil }
        books = books.filter { committed.books[$0.key] != nil }
        try await findObjects()
    }

    func reopen() async throws {
        note("close and reopen")
        live = nil
        try await opened.close()
        try await openAgain()
    }

    /// Lets go of the store without `close()`: everything made before commits, links to new
    /// objects included.
    private func releaseStore() async throws {
        note("let go of the store without close(), then open it again")
        let worker = try opened.worker
        live = nil
        store = nil
        await worker.closed()
        try await openAgain()
    }

    /// Opens a new store and finds the objects of the reference's rows in it.
    private func openAgain() async throws {
        committed = reference
        // Now and then the program first opens it without `Shelf`, which `Book` points at:
        // refused, naming the missing model (the database is checked after the next flush).
        if transcript.count % 3 == 0 {
            note("open without Shelf: refused")
            do {
                _ = try await engine.open(database, models: [Book.self])
                throw Divergence(message: "a store without Shelf, which Book points at, opened")
            } catch let error as StoreError where error.code == .modelNotRegistered && error.message.contains("pass Shelf in `models:`") {}
        }
        try await open()
        shelves = [:]
        books = [:]
        try await findObjects()
    }

    /// Finds the objects of the reference's rows the program holds none for, by serial.
    private func findObjects() async throws {
        let store = try opened
        let shelfBySerial = Dictionary(try await store.async.fetch(FetchDescriptor<Shelf>()).map { ($0.serial, $0) }) { first, _ in first }
        let bookBySerial = Dictionary(try await store.async.fetch(FetchDescriptor<Book>()).map { ($0.serial, $0) }) { first, _ in first }
        for ref in reference.shelves.keys where shelves[ref] == nil {
            guard let shelf = shelfBySerial[ref] else { throw Divergence(message: "shelf \(ref) is not found") }
            shelves[ref] = shelf
        }
        for ref in reference.books.keys where books[ref] == nil {
            guard let book = bookBySerial[ref] else { throw Divergence(message: "book \(ref) is not found") }
            books[ref] = book
        }
    }

    // MARK: - Checks

    func check(afterFlush: Bool) async throws {
        let store = try opened
        if engine == .postgres {
            try await store.async.prefetch([\Shelf.parent, \Shelf.children, \Shelf.books, \Shelf.holds], of: Array(shelves.values))
            try await store.async.prefetch([\Book.shelf, \Book.hold, \Book.keeper], of: Array(books.values))
        }
        // By identity, so that a check is linear in the rows (a program may hold 33,000 books).
        let shelfRefs = Dictionary(uniqueKeysWithValues: shelves.map { (ObjectIdentifier($0.value), $0.key) })
        let bookRefs = Dictionary(uniqueKeysWithValues: books.map { (ObjectIdentifier($0.value), $0.key) })
        func refOf(_ shelf: Shelf?) -> Ref? {
            shelf.map { shelfRefs[ObjectIdentifier($0)] ?? -1 }
        }
        func refs(_ objects: [Book]) -> Set<Ref> {
            Set(objects.map { bookRefs[ObjectIdentifier($0)] ?? -1 })
        }
        let expectedChildren = Dictionary(grouping: reference.shelves.compactMap { ref, row in row.parent.map { ($0, ref) } }, by: \.0).mapValues { Set($0.map(\.1)) }
        let expectedOn = Dictionary(grouping: reference.books.compactMap { ref, row in row.shelf.map { ($0, ref) } }, by: \.0).mapValues { Set($0.map(\.1)) }
        let expectedHeld = Dictionary(grouping: reference.books.compactMap { ref, row in row.hold.map { ($0, ref) } }, by: \.0).mapValues { Set($0.map(\.1)) }
        for (ref, row) in reference.shelves {
            let shelf = shelves[ref]!
            let shown = ShelfRow(name: shelf.name, parent: refOf(shelf.parent))
            guard shown == row else { throw Divergence(message: "shelf \(ref) shows \(shown); expected \(row)") }
            let children = Set(shelf.children.map { refOf($0) ?? -1 })
            guard children == expectedChildren[ref, default: []] else {
                throw Divergence(message: "shelf \(ref).children is \(children.sorted()); expected \(expectedChildren[ref, default: []].sorted())")
            }
            let onIt = refs(shelf.books), held = refs(shelf.holds)
            guard onIt == expectedOn[ref, default: []] else {
                throw Divergence(message: "shelf \(ref).books is \(Self.brief(onIt)); expected \(Self.brief(expectedOn[ref, default: []]))")
            }
            guard held == expectedHeld[ref, default: []] else {
                throw Divergence(message: "shelf \(ref).holds is \(Self.brief(held)); expected \(Self.brief(expectedHeld[ref, default: []]))")
            }
        }
        for (ref, row) in reference.books {
            let book = books[ref]!
            let shown = BookRow(title: book.title, shelf: refOf(book.shelf), hold: refOf(book.hold), keeper: refOf(book.keeper))
            guard shown == row else { throw Divergence(message: "book \(ref) shows \(shown); expected \(row)") }
        }
        let counts = (try await store.async.fetchCount(FetchDescriptor<Shelf>()), try await store.async.fetchCount(FetchDescriptor<Book>()))
        guard counts == (reference.shelves.count, reference.books.count) else {
            throw Divergence(message: "the store counts \(counts.0) shelves and \(counts.1) books; expected \(reference.shelves.count) and \(reference.books.count)")
        }
        // Through the to-one: the books on shelves named A, whatever waits for its key.
        let expected = Set(reference.books.filter { $0.value.shelf.map { reference.shelves[$0]!.name == "A" } ?? false }.map(\.key))
        let fetched = try await store.async.fetch(Self.onShelfA)
        guard refs(fetched) == expected, fetched.count == expected.count else {
            throw Divergence(message: "a fetch of the books on shelves named A found \(Self.brief(refs(fetched))); expected \(Self.brief(expected))")
        }
        if let live {
            guard live.count == fetched.count, zip(live, fetched).allSatisfy({ $0 === $1 }) else {
                throw Divergence(message: "the live list of the books on shelves named A holds \(Self.brief(refs(Array(live)))); a fetch returns \(Self.brief(refs(fetched)))")
            }
            guard told == live.keys else {
                throw Divergence(message: "the live list of the books on shelves named A holds \(live.count) rows; its onChange differences, applied in turn, give \(told.map { "\($0.count) rows" } ?? "a difference that does not apply")")
            }
            live.checkInvariants()
        }
        if afterFlush { try await checkDatabase() }
    }

    /// Books by number, the first twenty when there are many.
    private static func brief(_ refs: Set<Ref>) -> String {
        let sorted = refs.sorted()
        return sorted.count > 20 ? "\(sorted.prefix(20))… (\(sorted.count) books)" : "\(sorted)"
    }

    /// What the database (or a copy of it) holds, read by another process: the committed
    /// rows, each link to the row the program pointed it at (by serial).
    private func checkDatabase(_ engine: TestEngine? = nil, _ database: String? = nil) async throws {
        let (engine, database) = (engine ?? self.engine, database ?? self.database)
        func serial(_ ref: Ref?) -> String { ref.map { "\($0)" } ?? "" }
        let expectedShelves = committed.shelves.map { ref, row in "\(ref)|\(row.name)|\(serial(row.parent))" }.sorted()
        let expectedBooks = committed.books.map { ref, row in "\(ref)|\(row.title)|\(serial(row.shelf))|\(serial(row.hold))|\(serial(row.keeper))" }.sorted()
        let shelfRows = try await engine.sql(database, "SELECT s.serial, s.name, p.serial FROM shelves s LEFT JOIN shelves p ON p.id = s.parent_id")
            .split(separator: "\n").map(String.init).sorted()
        let bookRows = try await engine.sql(database, "SELECT b.serial, b.title, s.serial, h.serial, k.serial FROM books b LEFT JOIN shelves s ON s.id = b.shelf_id LEFT JOIN shelves h ON h.id = b.hold_id LEFT JOIN shelves k ON k.id = b.keeper_id")
            .split(separator: "\n").map(String.init).sorted()
        guard shelfRows == expectedShelves else { throw Divergence(message: "the database's shelves are \(shelfRows); expected \(expectedShelves)") }
        guard bookRows == expectedBooks else { throw Divergence(message: "the database's books are \(bookRows); expected \(expectedBooks)") }
    }
}
