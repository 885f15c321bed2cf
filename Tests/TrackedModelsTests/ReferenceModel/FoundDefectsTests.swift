import Foundation
import PostgresTestSupport
import Testing
@testable import TrackedModels

/// One test per defect that the reference model (or a user before it) found, each on the
/// shortest program that showed it. The generator keeps looking for the next one; these make
/// sure the found ones stay fixed.
@MainActor
@Suite(.serialized) struct FoundDefectsTests {
    /// A file with the reference model's table (`CHECK (count <> 13)`, nullable `note`), rows
    /// 1 to `rows` (title "Item N", count 0, note "n"), a store over it, and a second
    /// connection that commits as another process would.
    @MainActor struct Fixture {
        let directory: TemporaryDirectory
        let path: String
        let store: ModelStore
        let other: Connection

        init(rows: Int = 5, declaration: TableDeclaration = .plain(.sqlite), configuration: ModelStore.Configuration = Harness.configuration) throws {
            directory = try TemporaryDirectory()
            path = directory.path("model.sqlite")
            other = try Connection(filename: path, mode: .readWriteCreate, busyTimeout: .seconds(5))
            try other.execute(declaration.sql)
            for key in 1...Int64(max(rows, 1)) where rows > 0 {
                try other.makeStatement("INSERT INTO items VALUES (?, ?, 0, 'n', 0.5, NULL, 0, NULL)").run([.integer(key), .text("Item \(key)")])
            }
            store = try ModelStore(.file(path), models: [Item.self], configuration: configuration)
        }

        func item(_ key: Int64) throws -> Item {
            try #require(try store.find(Item.self, key: key))
        }

        func commit(_ sql: String) async throws {
            try other.execute(sql)
            try await store.refreshExternalChanges()
        }

        func file(_ sql: String) throws -> SQLValue {
            try other.scalar(sql)
        }
    }

    // MARK: - Programs the generator found, replayed

    /// Runs a program the generator shrank to, on the plain table, expecting it to agree with
    /// the reference to its end.
    private func replay(
        table: UInt64 = 0, on engine: TestEngine = .sqlite, _ steps: [(kind: Int, a: UInt64, b: UInt64)], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let declaration = TableDeclaration(seed: table, engine: engine)
        let outcome = try await ReferenceModelTests.run(declaration: declaration, steps: steps.map { Step(kind: $0.kind, a: $0.a, b: $0.b) })
        guard case .agreed = outcome else {
            Issue.record("the program did not run to the end agreeing with the reference", sourceLocation: sourceLocation)
            return
        }
    }

    /// Found once programs discarded every pending change: the program's insert and delete of
    /// a key another connection then inserted, discarded together, announced that row's return
    /// twice (once per discarded unit).
    @Test func discardingAnInsertAndItsDeleteShowsTheOtherConnectionsRowOnce() async throws {
        try await replay([(33, 0, 0), (42, 0, 0), (83, 0, 0), (108, 0, 0)])
    }

    /// Found by the 10x soak: a `find` while an insert was in flight read the row the commit
    /// had just given that insert's key (published ahead of the store applying it) and made a
    /// second object of it; when the key arrived, the insert's own object was detached, and a
    /// live list kept the row by its placeholder.
    @Test func aFindWhileAnInsertIsInFlightMakesNoSecondObjectOfItsRow() async throws {
        try await replay([(38, 0, 0), (61, 1090985511327, 1049033199240)])
    }

    /// Found by the generator: another connection's `TRUNCATE` and inserts of keys the store
    /// showed, in one transaction, were heard as inserts of rows that were there, then the
    /// reset. A table known only as a whole is now heard only as the reset's reload.
    @Test func rowsATruncateInsertedAgainAreHeardThroughTheResetAlone() async throws {
        _ = try await TestEngine.postgres.makeDatabase(in: TemporaryDirectory())
        try await replay(table: 1_073_907_228, on: .postgres, [(94, 417_717_930_334, 169_771_926_483), (118, 587_139_672_331, 829_344_709_174)])
    }

    /// Found by the generator: a read over more pending rows than go as single parameters sent
    /// them as an array whose NaN (a signaling one, as Swift writes it: `snan(0x…)`) PostgreSQL
    /// cannot read, and every read failed. An array's elements are now sent as parameters are.
    @Test func aNaNAmongManyPendingRowsIsReadOnPostgreSQL() async throws {
        _ = try await TestEngine.postgres.makeDatabase(in: TemporaryDirectory())
        try await replay(on: .postgres, [(119, 0, 233_345_019_251)])
    }

    /// Found by the 10x soak: another connection's change of a `COLLATE NOCASE` column from
    /// 'o' to 'O' went unheard: the change log's trigger compared the old and new values with
    /// the column's own collation. It compares them byte for byte now.
    @Test func aChangeOfLetterCaseInACaseInsensitiveColumnIsHeard() async throws {
        try await replay(table: 59_774, [(83, 0, 922_356_661_508), (73, 0, 872_753_782_474)])
    }

    /// Found by the 10x soak once another connection's changes came as a whole table: a
    /// pending delete of a row a `TRUNCATE` removed stayed pending (heard row by row, such a
    /// delete is dropped: there is no row left for it).
    @Test func aPendingDeleteOfARowATruncateRemovedIsDropped() async throws {
        _ = try await TestEngine.postgres.makeDatabase(in: TemporaryDirectory())
        try await replay(on: .postgres, [(33, 0, 0), (56, 0, 0), (42, 0, 0), (118, 24675711008, 147238873776)])
    }

    /// Found by the taken-back delete step on PostgreSQL: a refused bulk insert's row, its
    /// object deleted and the delete discarded (shown without an object), while an insert
    /// without a key got that very key from the server's sequence and committed. Discarding
    /// the bulk insert read the row back later, found the new row, and announced it as an
    /// insert of a row subscribers were shown: it is heard as the shown row's delete, then the
    /// database's row's insert (on SQLite, where the row is read at once, the same).
    @Test func discardingAnInsertShownWithoutAnObjectOverAnotherRowOfItsKeyIsHeardAsBoth() async throws {
        _ = try await TestEngine.postgres.makeDatabase(in: TemporaryDirectory())
        try await replay(table: 3_462_290_274, on: .postgres, [
            (119, 109_850_972_495, 1_019_455_639_122), (60, 1_010_332_831_463, 964_584_197_734), (41, 252_951_476_185, 362_052_588_064),
            (42, 263_657_053_814, 603_763_648_825), (126, 737_620_933_055, 51_567_652_344), (62, 982_783_759_885, 239_258_573_941),
            (125, 3_550_386_562, 1_034_139_946_224),
        ])
    }

    /// Found by CI's budget on PostgreSQL: a live list whose query the server refuses while the
    /// rows make it overflow (`count + -9223372036854775808`) could not read its rows again after
    /// a bulk insert's reset, and kept the row of an insert whose key had arrived meanwhile.
    /// Once the overflowing row was deleted, the query worked again, but the list still held
    /// that row: a read placed later that fails now makes the next change read every row again.
    @Test func aLiveListWhoseReadFailedReadsItsRowsAgainAtTheNextChange() async throws {
        _ = try await TestEngine.postgres.makeDatabase(in: TemporaryDirectory())
        try await replay(table: 1_574_473_555, on: .postgres, [
            (40, 763_908_998_871, 685_737_614_626), (91, 239_813_311_611, 796_028_155_746), (18, 1_055_411_791_676, 705_115_432_829),
            (118, 774_775_796_114, 27_795_402_291), (41, 1_064_165_035_593, 913_982_474_687), (94, 824_778_924_174, 545_761_962_861),
            (15, 946_621_473_330, 772_818_272_422), (114, 241_795_513_501, 1_069_240_163_694), (88, 448_927_676_696, 459_926_483_917),
        ])
    }

    /// Found by a full run at stop 53: inside a transaction, a to-one pointed at a row, then at
    /// an object not yet inserted; its column's net change was none (NULL, a key, NULL again),
    /// so a grouped aggregate by `link?.title` never judged the row again and kept it in the
    /// NULL group.
    @Test func aToOneRepointedAtANewObjectInATransactionIsJudgedAgain() async throws {
        _ = try await TestEngine.sqlite.makeDatabase(in: TemporaryDirectory())
        try await replay(on: .sqlite, [(38, 0, 0), (128, 0, 0), (83, 0, 1_048_577), (49, 108_940_568_948, 832_608_097_338)])
    }

    /// Found at ten times CI's budget: a delete discarded while a flush was in flight read the
    /// row back after that batch had committed and before the store heard so, and laid the
    /// batch's increment over what it read once more (subscribers heard -26 for -33).
    @Test func aDiscardWhileAFlushIsInFlightLaysNoCommittedIncrementOverTheRowTwice() async throws {
        _ = try await TestEngine.sqlite.makeDatabase(in: TemporaryDirectory())
        try await replay(on: .sqlite, [(110, 0, 0), (56, 0, 0), (130, 206_107_276_749, 1_057_124_241_508)])
    }

    /// Found by this stop's soak on PostgreSQL: a row whose delete was discarded is read back
    /// later before it is announced; the checks' `find` made its object meanwhile, and the
    /// announcement, finding an object, told nobody, so a live list never took the row back.
    /// An object made since the discard told nobody either: the row is announced.
    @Test func aRowBackFromADiscardedDeleteIsHeardThoughAReadMadeItsObjectMeanwhile() async throws {
        _ = try await TestEngine.postgres.makeDatabase(in: TemporaryDirectory())
        try await replay(table: 65_146_935, on: .postgres, [
            (49, 835_973_073_084, 906_857_067_102), (63, 1_054_329_702_691, 257_060_699_630),
            (32, 10_641_576_651, 601_304_286_656), (125, 94_345_280_944, 155_695_908_692),
        ])
    }

    /// Found by this stop's soak: an object whose delete was taken back (the row shown without
    /// it), related to again (inserted again), and that re-insert discarded while the commit
    /// of its first insert was in flight: it was detached, though that insert still shows the
    /// row and holds it, as it stays attached when that insert is still pending.
    @Test(arguments: TestEngine.allCases)
    func discardingAReinsertWhileTheFirstInsertIsInFlightLeavesTheObjectAttached(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(119, 0, 0), (125, 0, 8_820_970), (62, 503_000_537_154, 513_584_488_895)])
    }

    /// Found by the shelves generator's thrown `deleteAll`: a book waiting for its key, on a
    /// shelf waiting for its key, came back from the rolled-back delete of every book
    /// pointing at nothing (its to-ones were not put back, only its values).
    @Test(arguments: TestEngine.allCases)
    func aRolledBackDeleteAllPutsBackTheToOnesOfObjectsWaitingForTheirKeys(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        let steps = [
            (13, 133_724_946_966, 1_007_331_596_198), (1, 69_753_667_857, 343_803_984_781), (3, 203_059_249_176, 610_549_766_376),
            (3, 547_143_589_489, 336_018_969_039), (19, 250_481_377_783, 103_257_532_584),
        ].map { Step(kind: $0.0, a: $0.1, b: $0.2) }
        let outcome = try await ShelvesReferenceModelTests.run(engine: engine, steps: steps)
        #expect(outcome == .agreed)
    }

    /// Found next: an insert whose delete was discarded, then discarded itself, left the object
    /// `find` had made of the row meanwhile attached, showing a row that never existed.
    @Test(arguments: TestEngine.allCases)
    func discardingAnInsertDetachesTheObjectAReadMadeOfItsRow(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(110, 0, 0), (42, 0, 0), (114, 0, 0), (108, 0, 0)])
    }

    /// Found next: discarding an insert made after a pending deleteAll told subscribers the
    /// row went back to what the file holds, which the deleteAll hides.
    @Test(arguments: TestEngine.allCases)
    func discardingAnInsertAfterADeleteAllLeavesTheRowHidden(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(83, 0, 0), (47, 0, 0), (33, 0, 0), (114, 0, 0)])
    }

    /// Found next: a raw-SQL fetch over a pending row no object shows, holding a NaN (which
    /// SQLite's table over the pending rows stores as NULL), threw instead of returning it.
    @Test func aRawFetchReturnsAPendingRowAsTheStoreHoldsIt() async throws {
        try await replay([(33, 0, 396_426_813_951), (42, 0, 0), (114, 0, 0)])
    }

    /// Found by the 10x soak next: a row the program inserts (pending, its object let go of
    /// by a delete whose discard brought the row back) was heard inserted again when another
    /// connection inserted that key: what the row shows is the program's insert.
    @Test func anotherConnectionsInsertOfARowThisStoreInsertsIsNotHeard() async throws {
        try await replay(table: 1_113_521_987, [(33, 0, 0), (42, 0, 0), (114, 0, 0), (83, 0, 0)])
    }

    /// Found once the check compared a live list's elements with a fresh fetch's objects:
    /// another connection replaced a row (deleted it and inserted it again), which subscribers
    /// may hear as no change; the list kept showing the old row's object, which the store no
    /// longer manages.
    @Test(arguments: TestEngine.allCases)
    func aLiveListShowsTheObjectOfARowAnotherConnectionReplaced(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(83, 0, 0), (89, 0, 0)])
        try await replay(on: engine, [
            (83, 5_819_050_234, 176_336_449_492), (41, 358_307_570_371, 444_169_023_647), (41, 77_240_625_168, 564_017_556_133),
            (15, 873_823_909_954, 770_955_127_284), (33, 971_645_082_071, 332_009_122_902), (40, 254_335_136_743, 904_671_458_259),
            (18, 109_718_435_482, 590_811_340_635), (1, 343_433_781_617, 66_942_248_665), (78, 363_461_029_150, 757_811_422_238),
            (89, 363_390_578_685, 811_363_254_889),
        ])
    }

    /// Found once items could link to items whose key SQLite assigns: a link to a new item,
    /// made by a row whose insert the database refuses (its key is the one SQLite gave the new
    /// item), was lost when the new item's object learned its key. It now commits with the
    /// row, as the key's placeholder resolved.
    @Test func aLinkToANewItemStaysWithARowThatWaitsBehindARefusal() async throws {
        try await replay([(38, 0, 0), (33, 1, 0), (0, 0, 112_167_654_794)])
    }

    /// Found once items could be related to detached objects: relating to a deleted item whose
    /// refused insert was still pending inserted the same object again, and discarding the
    /// refused insert then detached it, though its new insert was pending.
    @Test func discardingAnInsertKeepsTheObjectThatALaterInsertInsertsAgain() async throws {
        try await replay([(33, 1, 2_132_562), (33, 0, 0), (42, 3, 0), (56, 0, 0), (0, 0, 510_784_041_872), (67, 0, 0)])
    }

    /// Found by the first soak after keys were resolved inside the commit: a row that linked to
    /// a new item and was deleted in the same commit was told it took the new item's key.
    @Test func aRowDeletedInTheCommitThatResolvedItsLinkIsNotToldTheKey() async throws {
        try await replay([(33, 0, 0), (38, 0, 0), (0, 0, 24_814_116_039), (42, 0, 0), (56, 0, 0)])
    }

    /// Found once programs made live lists at any step: a live list made inside a transaction
    /// that then threw kept the row the transaction had inserted.
    @Test func aLiveListMadeInsideAThrownTransactionShowsItUndone() async throws {
        try await replay(table: 132, [(49, 609_509_576_418, 549_189_833_579)])
    }

    /// Found next: a live list made in a nested transaction that threw read its rows again,
    /// but not when the enclosing transaction threw too (it kept the outer one's deleteAll).
    @Test func aLiveListMadeInANestedTransactionShowsBothUndone() async throws {
        try await replay([(33, 0, 0), (49, 125_321_584_813, 620_802_113_287)])
    }

    /// Found by the 10x soak after the review mends: a new item linked to itself, whose key
    /// another object of the program held, was heard as an update of a row with no key.
    @Test func aNewItemLinkedToItselfThatLosesItsKeyIsNotHeard() async throws {
        try await replay([(38, 0, 0), (33, 301_962_925_241, 0), (0, 2, 12_555_085_476)])
    }

    /// Found once programs changed objects while a flush was in flight: a new item's link
    /// to another new item, made while both inserts were in flight (one then refused), was not
    /// given to the item when the other got its key, so its to-many missed it.
    @Test(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server"))
    func aLinkMadeWhileBothInsertsWereInFlightReachesTheObject() async throws {
        let program = try #require(Self.program(
            "(534009358, [(26, 6692844708, 430138300271), (48, 659844670542, 112926332047), (20, 851572220511, 554635319132), (72, 1071133342892, 799675716244), (19, 367197858014, 918565795438), (12, 389161331369, 388333766341), (83, 531444285030, 62683132946), (46, 703629362407, 395890993783), (61, 967054203102, 1028332917289), (55, 298109486126, 183645047706), (40, 1013710331111, 173268958984), (96, 516044225896, 710175838422), (10, 1011547527078, 223121149129), (1, 863060200028, 428649447104), (39, 322098315363, 25761620062), (45, 111972595064, 129576741786), (61, 721625126496, 810729409138)])"
        ))
        try await replay(table: program.table, on: .postgres, program.steps)
    }

    /// Found next: an object pointing at a new item whose insert was discarded pointed at it
    /// again once the program related something to that item (inserting it anew), though its
    /// row links to nothing.
    @Test func anObjectForgetsANewTargetWhoseInsertWasDiscarded() async throws {
        try await replay([(38, 0, 1_102_735), (93, 0, 0), (83, 0, 0), (0, 0, 120_664_982_514), (18, 0, 0), (67, 0, 0), (33, 1, 0), (0, 4_597_683, 411_686_599_518)])
    }

    /// Found by discarding the last pending change: a discarded link to a new item (its row
    /// showed NULL before and after) left the object pointing at that item.
    @Test(arguments: TestEngine.allCases)
    func discardingALinkToANewItemLeavesTheObjectPointingAtNothing(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(33, 29, 0), (56, 0, 0), (38, 0, 1), (0, 0, 33), (114, 0, 0)])
    }

    /// Found by discarding every pending change: an insert whose delete was discarded first
    /// (the row showed again, without an object) left its row in a live list once the insert
    /// was discarded too.
    @Test(arguments: TestEngine.allCases)
    func discardingAnInsertShownWithoutAnObjectTakesItsRowOutOfLists(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(table: 12, on: engine, [(33, 11, 0), (42, 0, 0), (114, 0, 0), (108, 0, 0)])
    }

    /// Found by the 10x soak (stop 40): discarding an insert shown without an object over
    /// another connection's row of its key, holding the same values, was heard as a delete and
    /// an insert of the row, though nothing it shows changed.
    @Test(arguments: TestEngine.allCases)
    func discardingAnInsertShownWithoutAnObjectOverAnEqualRowIsHeardAsNothing(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(89, 147_426_618_696, 0), (33, 189_360_794_737, 0), (42, 0, 0), (114, 0, 0), (108, 0, 106_690_036_936)])
    }

    /// Found next: the object `find` made of that row while only the insert showed it stayed
    /// attached once the insert was discarded, showing the other connection's row instead of
    /// going with the insert.
    @Test(arguments: TestEngine.allCases)
    func discardingAnInsertOverAnotherRowDetachesTheObjectAReadMadeOfIt(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(89, 147_426_618_696, 0), (33, 189_360_794_737, 0), (42, 0, 0), (114, 0, 0), (27, 17, 0), (108, 0, 0)])
    }

    /// Found in review: that insert, then another object inserted with its key, both
    /// discarded: the second object was let go as if a read had made it, and the row was heard
    /// going back twice, the second time from values its subscribers no longer had. (The
    /// generator checks old values against what subscribers were told since.)
    @Test func discardingAnotherInsertOfTheKeyOfAnInsertShownWithoutAnObjectIsHeardOnce() async throws {
        try await replay([(89, 147_426_618_696, 0), (33, 189_360_794_737, 0), (42, 0, 0), (114, 0, 0), (33, 189_360_794_737, 5), (108, 0, 0)])
    }

    /// Found by the 10x soak (stop 40): another connection's update of a cell a pending
    /// assignment overwrites, on a row no object shows (its delete was discarded), was heard
    /// though the row still shows the assignment.
    @Test(arguments: TestEngine.allCases)
    func anExternalUpdateOfACellAPendingAssignmentOverwritesIsNotHeardOnARowWithoutAnObject(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(61, 0, 0), (0, 0, 622_241_774_261), (33, 146_178_935, 580_091_241_575), (127, 125_013_416_232, 982_813_609_420), (73, 270_714_760_205, 957_876_031_870)])
    }

    /// Found by changes made while a flush is in flight, then discarded (10x soak, seed
    /// 121409817): an item whose insert the database refused (count 13 under a CHECK) was
    /// related in flight to a new item; discarding that change pointed it back at nothing, but
    /// the new item's to-many (keyed by then) still listed it.
    @Test func discardingARelationOfAnItemWaitingForItsKeyTakesItOutOfTheTargetsToMany() async throws {
        try await replay(table: 0, on: .sqlite, [(61, 0, 378_679_844_033), (38, 0, 460), (61, 193_016_445_284, 208_814_327_598), (114, 0, 0)])
    }

    /// Found by graph inserts: an item given children before it was stored, deleted (with
    /// them) by a deleteAll, then inserted again by a relation to it, inserted its old children
    /// again too, and listed them.
    @Test(arguments: TestEngine.allCases)
    func anItemInsertedAgainDoesNotBringBackTheChildrenItWasGivenBefore(_ engine: TestEngine) async throws {
        _ = try await engine.makeDatabase(in: TemporaryDirectory())
        try await replay(on: engine, [(110, 350_494_163, 0), (47, 0, 0), (33, 0, 0), (0, 0, 512_805_508_707)])
    }

    /// Found in the harness: a live list keeps the object of a member its window moved past
    /// (two inserts pushed row 24 out of a `fetchLimit` window), so inserting a second object
    /// for that key is refused, as for any object the store holds.
    @Test func anInsertOfAKeyWhoseObjectAListKeepsPastItsWindowIsRefused() async throws {
        try await replay(table: 83_641_202, [(93, 333_316_962_162, 1_083_181_280_590), (33, 0, 0), (33, 1, 0), (33, 834_581_409_784, 0)])
    }

    /// A program as a failure prints it, `(table, [(kind, a, b), ...])`.
    static func program(_ text: String) -> (table: UInt64, steps: [(kind: Int, a: UInt64, b: UInt64)])? {
        let numbers = text.split { !$0.isNumber }.compactMap { UInt64($0) }
        guard numbers.count % 3 == 1 else { return nil }
        return (numbers[0], stride(from: 1, to: numbers.count, by: 3).map { (Int(numbers[$0]), numbers[$0 + 1], numbers[$0 + 2]) })
    }

    /// Found by the 10x soak next: a live list made inside a transaction that inserted a row,
    /// then deleted it, kept the row (the transaction's net change is nothing, so nothing was
    /// heard).
    @Test func aLiveListMadeInsideATransactionFollowsWhatItDidAfter() async throws {
        try await replay(table: 21, [(49, 924_824_987_750, 820_658_404_374)])
    }

    /// Found by a fresh-clone CI run: an object deleted in a transaction, then related (while
    /// detached) to a new item, showed that item as its link once the transaction threw and it
    /// came back (its row links to nothing).
    @Test(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server"))
    func anObjectBackFromAThrownTransactionHasTheLinksItHadBefore() async throws {
        try await replay(on: .postgres, [(38, 0, 0), (33, 0, 0), (49, 171_620_423_058, 879_440_510_251)])
    }

    /// Found by the 10x soak: an object whose insert the database refused, then deleted, then
    /// inserted again by relating an item to it: discarding that last insert left it attached
    /// (its refused first insert still pending counted as inserting it, though the delete
    /// after it had undone it).
    @Test func anObjectDeletedAfterARefusedInsertIsLetGoWhenItsInsertAgainIsDiscarded() async throws {
        try await replay(table: 1_712_795_059, [
            (41, 173_775_240_590, 843_321_730_621), (35, 394_455_771_121, 133_542_219_494), (62, 478_088_753_167, 635_465_661_906),
            (45, 431_558_911_492, 717_883_792_381), (110, 592_249_840_634, 763_231_845_754), (118, 110_305_933_273, 838_275_587_734),
            (15, 148_427_091_045, 88_946_635_406), (106, 494_534_006_102, 837_794_377_641), (14, 400_806_104_236, 734_212_919_628),
            (15, 688_839_625_662, 31_522_202_207), (89, 1_086_933_522_007, 754_308_886_338), (114, 87_020_962_035, 490_686_704_144),
        ])
    }

    /// Found by the 10x soak: a row inserted with a key, deleted, and the delete discarded,
    /// shows again without an object; when a row inserted without a key got that key from
    /// SQLite at the next commit, its object took the row and subscribers heard it inserted
    /// again, though the pending insert (which the database now refuses) still shows it.
    @Test func aRowShownByAPendingInsertWithoutAnObjectIsNotTakenByAnInsertGivenItsKey() async throws {
        try await replay([(38, 0, 0), (33, 197_227_885_561, 0), (42, 0, 0), (114, 0, 0)])
    }

    /// Found by a full run (stop 51): rows 1 inserted without a key and with key 1, flushed;
    /// while in flight, key 1's object deleted and the delete discarded. SQLite gave key 1 to
    /// the first insert, and the store, not having applied that yet, showed row 1 by that
    /// insert's placeholder only: the discard found no row 1 to bring back. Once the key was
    /// applied, the refused insert of key 1 showed the row (without an object), and neither
    /// live lists nor subscribers heard it. The queued insert now shows the row throughout.
    @Test func aRowAQueuedInsertKeepsShowsWhileItsKeyIsAssignedAhead() async throws {
        try await replay([(38, 0, 0), (128, 0, 0), (61, 928_626_353_221, 308_015_238_264)])
    }

    /// Found by the coverage run (stop 51), a defect of the reference, not of the store: a
    /// flush whose commits fail at their end, with changes made while it was in flight. The
    /// store commits the changes in flight on their own first; the database refused all of
    /// them, so that no commit ran, and the store rightly kept the refusal; its second commit,
    /// of the changes made meanwhile, failed. The reference took both as one failed commit and
    /// forgot the refusal, so a later increment of the refused cell went, to it, into a later
    /// change instead of replacing the refused value, and the refused change stayed.
    @Test func aFlushWhoseFirstCommitIsAllRefusedLearnsTheRefusalThoughItsSecondFails() async throws {
        try await replay([
            (111, 895_089_281_511, 526_105_899_172), (138, 423_998_102_105, 1_085_313_892_347), (4, 734_894_787_839, 51_181_076_070),
            (15, 58_686_872_371, 217_208_348_792), (131, 246_419_889_352, 591_712_916_884), (20, 639_954_132_846, 679_009_578_407),
        ])
    }

    /// Found by the generator: a row pointed at a new object (its to-one shows NULL until the
    /// object has its key), deleted and inserted again by another connection, which drops the
    /// link: heard as an update of the cells that differ, the link's not among them, a live list
    /// whose join had reached the new object kept the row.
    @Test func aLiveListDropsARowWhoseLinkToANewObjectAnotherConnectionsReplaceTookAway() async throws {
        try await replay(table: 389_806_029, [
            (33, 0, 0), (56, 0, 0), (38, 150_491_226_659, 155_243_244_513), (85, 1_019_126_233_145, 556_185_466_041),
            (10, 445_623_481_730, 922_524_930_998), (90, 576_351_094_789, 978_789_920_754),
        ])
    }

    /// Found by the 10x soak of stop 37: a live list judging a row after a change, its read of
    /// the database failing (an I/O error), kept the row where it was until the row's next
    /// change; the row is now read again once the store's actor is free, and placed then.
    @Test func aLiveListWhoseReadOfAChangedRowFailedReadsItAgainLater() async throws {
        try await replay(table: 1_459_429_047, [
            (10, 920_497_785_731, 577_742_983_043), (18, 282_621_236_364, 198_896_717_386), (47, 974_120_508_076, 215_957_515_151),
            (15, 134_934_332_305, 509_769_388_121), (52, 723_100_160_398, 82_824_971_655), (114, 72_800_796_299, 1_071_445_681_124),
            (103, 919_072_599_721, 751_009_961_746), (42, 291_257_128_835, 772_666_164_980), (105, 291_424_494_754, 1_044_900_319_429),
            (45, 240_429_873_227, 713_037_834_391), (80, 162_634_720_329, 512_024_273_118), (107, 1_000_997_735_690, 196_491_341_547),
            (102, 329_913_216_675, 611_873_512_665), (67, 623_165_123_575, 350_759_521_514), (61, 38_072_166_972, 113_005_615_791),
            (86, 138_422_262_768, 286_837_392_937), (63, 425_826_209_676, 560_231_945_285), (111, 915_896_442_721, 722_486_572_490),
            (54, 920_593_689_267, 339_211_711_442), (92, 1_044_567_782_204, 315_058_311_217), (63, 502_932_316_056, 494_604_268_946),
            (121, 552_180_003_450, 142_408_203_503), (99, 1_022_878_594_530, 992_173_280_396), (123, 274_452_776_613, 307_542_493_727),
            (4, 10_058_847_040, 343_988_709_968), (9, 270_651_897_159, 649_632_200_492), (29, 644_980_749_403, 442_144_149_261),
            (66, 531_963_698_990, 15_790_995_907), (72, 79_672_581_302, 1_078_023_509_949), (69, 243_313_550_751, 1_061_245_442_153),
            (59, 425_507_648_334, 685_769_802_881), (50, 843_866_669_230, 680_082_309_301),
        ])
    }

    // MARK: - The issue's examples

    @Test func aRefusedChangeFixedBetweenOtherWritesStoresTheLastOfThem() async throws {
        let fixture = try Fixture()
        let item = try fixture.item(1)
        item.title = "before"
        item.count = 13
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        item.title = "between"
        item.count = 1
        item.title = "after"
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title || '/' || count FROM items WHERE id = 1") == "after/1")
    }

    @Test func aDeletedRowIsNotFoundBeforeOrAfterTheDeleteCommits() async throws {
        let fixture = try Fixture()
        try fixture.store.delete(try fixture.item(2))
        #expect(try fixture.store.find(Item.self, key: 2) == nil)
        try await fixture.store.flush()
        #expect(try fixture.store.find(Item.self, key: 2) == nil)
    }

    @Test func anotherProcessUpdatingARowWhoseDeleteIsPendingLeavesTheLiveListRight() async throws {
        let fixture = try Fixture()
        let list = try fixture.store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)]))
        try fixture.store.delete(try fixture.item(3))
        try await fixture.commit("UPDATE items SET count = 7 WHERE id = 3")
        try await fixture.store.flush()
        #expect(list.keys == [1, 2, 4, 5])
        #expect(list.map(\.id) == [1, 2, 4, 5])
        #expect(try fixture.store.fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)])).map(\.id) == [1, 2, 4, 5])
    }

    @Test func aKeyChangedByAnotherProcessMovesTheRowAndDetachesTheOldObject() async throws {
        let fixture = try Fixture()
        let list = try fixture.store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)]))
        let old = try fixture.item(5)
        old.title = "written before the key changed"
        try await fixture.commit("UPDATE items SET id = 2000 WHERE id = 5")
        #expect(list.keys == [1, 2, 3, 4, 2000])
        // Documented: the old object is detached at that moment, and its changes not yet
        // committed are dropped; nothing it is given later is recorded.
        #expect(!old._$tracking.isAttached)
        #expect(fixture.store.pendingChanges.isEmpty)
        old.title = "written after"
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 2000") == "Item 5")
        #expect(try fixture.store.find(Item.self, key: 2000)?.title == "Item 5")
    }

    @Test func aWriteThatMeetsAKeyChangedUnseenIsRefusedNotLost() async throws {
        var configuration = Harness.configuration
        configuration.observesExternalChanges = false
        let fixture = try Fixture(configuration: configuration)
        let old = try fixture.item(5)
        try fixture.other.execute("UPDATE items SET id = 2000 WHERE id = 5")
        old.title = "for a row that is gone"
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        let pending = try #require(fixture.store.pendingChanges.first)
        #expect(pending.error?.code == .changeRejected)
        #expect(pending.error?.message.contains("no longer in the database") == true)
        // Trying again cannot help: a later row of that key would be another row.
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.store.discard(pending)
        try await fixture.store.flush()
    }

    @Test func aNullSetByAnotherProcessOnAnUnloadedRowEntersALiveListOfNulls() async throws {
        let fixture = try Fixture()
        let list = try fixture.store.results(for: FetchDescriptor<Item>(predicate: #Predicate { $0.note == nil }))
        #expect(list.keys.isEmpty)
        try await fixture.commit("UPDATE items SET note = NULL WHERE id = 4")
        #expect(list.keys == [4])
    }

    /// Found by a review of the read-through mend: an insert of a key another connection's row
    /// holds, pointing at a new object, shows in a live list through that link; discarding the
    /// insert brings back the committed row, whose link is NULL as the insert's cell showed, so
    /// no cell changed and the list kept the row.
    @Test func discardingAnInsertOverACommittedRowTakesItsLinkToANewObjectOutOfALiveList() async throws {
        let fixture = try Fixture()
        let list = try fixture.store.results(for: FetchDescriptor<Item>(predicate: #Predicate { $0.link?.title == "target" }))
        let target = Item(key: nil, values: [.null, .text("target"), .integer(0), .null, .real(0), .null, .integer(0), .null])
        try fixture.store.insert(target)
        let copy = Item(key: 3, values: [.integer(3), .text("copy"), .integer(0), .null, .real(0), .null, .integer(0), .null])
        copy.link = target
        try fixture.store.insert(copy)
        #expect(list.keys == [3])
        try fixture.store.discard(try #require(fixture.store.pendingChanges.last))
        #expect(try fixture.store.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.link?.title == "target" })).isEmpty)
        #expect(list.keys.isEmpty)
    }

    @Test func aThrowingTransactionThatDeletedEverythingIsHeardByNobody() async throws {
        let fixture = try Fixture()
        var heard: [ChangeEvent] = []
        let token = try fixture.store.subscribe(to: .table(Item.self)) { heard.append($0) }
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try fixture.store.transaction {
                try fixture.store.deleteAll(Item.self)
                throw Abort()
            }
        }
        try await fixture.store.flush()
        #expect(heard.isEmpty)
        #expect(try fixture.file("SELECT count(*) FROM items") == 5)
        token.cancel()
    }

    // MARK: - Found by the reference model

    @Test func aRowDeletedAndInsertedAgainInOneTransactionIsHeardAsAnUpdate() async throws {
        let fixture = try Fixture()
        var heard: [ChangeEvent] = []
        let token = try fixture.store.subscribe(to: .table(Item.self)) { heard.append($0) }
        let old = try fixture.item(1)
        try fixture.store.transaction {
            try fixture.store.delete(old)
            try fixture.store.insert(Item(id: 1, title: "again", count: 0, note: "n", score: 0.5, payload: nil, flag: false))
        }
        #expect(heard.map(\.kind) == [.update])
        #expect(heard.first?.changes.map(\.column) == ["title"])
        token.cancel()
    }

    @Test func anIncrementFollowedByAnAssignmentInTheSameFlushKeepsTheAssignment() async throws {
        let fixture = try Fixture()
        let item = try fixture.item(1)
        try fixture.store.increment(\Item.count, of: item, by: 1)
        try fixture.store.transaction { item.count = -66 }
        try await fixture.store.flush()
        #expect(item.count == -66)
        #expect(try fixture.file("SELECT count FROM items WHERE id = 1") == -66)
    }

    @Test func fixingARefusedInsertAfterATransactionTouchedItsRowCommitsBoth() async throws {
        let fixture = try Fixture(rows: 0)
        let item = Item(id: 9, title: "t", count: 13, note: "n", score: 0, payload: nil, flag: false)
        try fixture.store.insert(item)
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.store.transaction { item.score = 2.5 }
        item.count = 5
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT count || '/' || score FROM items WHERE id = 9") == "5/2.5")
    }

    @Test func aDeleteOfARowAnotherProcessDeletedSparesTheRowThatTakesItsKey() async throws {
        let fixture = try Fixture(rows: 1)
        let new = Item(id: nil, title: "new", count: 0, note: nil, score: 0, payload: nil, flag: false)
        try fixture.store.insert(new)
        try fixture.store.delete(try fixture.item(1))
        try await fixture.commit("DELETE FROM items WHERE id = 1")
        try await fixture.store.flush()
        // SQLite gives the new row key 1 again; the delete meant the old row 1.
        #expect(new.id == 1)
        #expect(try fixture.file("SELECT title FROM items WHERE id = 1") == "new")
    }

    @Test func aDiscardedDeleteEverythingBringsTheRowsBackToSubscribersAndLists() async throws {
        let fixture = try Fixture(rows: 2)
        let list = try fixture.store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)]))
        try fixture.store.transaction {
            try fixture.store.deleteAll(Item.self)
            try fixture.store.insert(Item(id: 3, title: "refused", count: 13, note: nil, score: 0, payload: nil, flag: false))
        }
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.store.discard(try #require(fixture.store.pendingChanges.first))
        try await fixture.store.refreshExternalChanges()
        #expect(list.keys == [1, 2])
        #expect(try fixture.store.find(Item.self, key: 1)?.title == "Item 1")
    }

    @Test func textIsStoredAsAssignedScalarForScalar() async throws {
        let fixture = try Fixture()
        let item = try fixture.item(1)
        item.title = "caf\u{E9}"
        try await fixture.store.flush()
        // Canonically equivalent, but another stored value: an assignment, not a no-op.
        item.title = "cafe\u{301}"
        item.note = "a\u{0}b"
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT hex(title) FROM items WHERE id = 1") == "63616665CC81")
        #expect(try fixture.file("SELECT hex(note) FROM items WHERE id = 1") == "610062")
    }

    @Test func aDeclaredCollationDoesNotChangeWhatATypedQueryMatchesOrHowItSorts() async throws {
        var declaration = TableDeclaration.plain(.sqlite)
        declaration.titleCollation = "NOCASE"
        let fixture = try Fixture(rows: 0, declaration: declaration)
        try fixture.other.execute("INSERT INTO items VALUES (1, 'b', 0, NULL, 0, NULL, 0, NULL), (2, 'B', 0, NULL, 0, NULL, 0, NULL), (3, 'a', 0, NULL, 0, NULL, 0, NULL)")
        let upper = try fixture.store.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.title == "B" }))
        #expect(upper.map(\.id) == [2])
        let sorted = try fixture.store.fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.title)]))
        #expect(sorted.map(\.title) == ["B", "a", "b"])
    }

    @Test func aKeyLeftToSQLiteOnAColumnThatIsNotTheRowIDIsRefusedAtOpen() throws {
        var declaration = TableDeclaration.plain(.sqlite)
        declaration.key = .intPrimaryKey
        #expect {
            _ = try Fixture(rows: 0, declaration: declaration)
        } throws: { error in
            (error as? StoreError)?.code == .schemaMismatch && "\(error)".contains("INTEGER PRIMARY KEY")
        }
    }

    @Test func aCounterThatWouldOverflowIsRefusedNotTurnedIntoAReal() async throws {
        let fixture = try Fixture()
        let item = try fixture.item(1)
        try fixture.other.execute("UPDATE items SET count = 9223372036854775807 WHERE id = 1")
        try fixture.store.increment(\Item.count, of: item, by: 1)
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        #expect(try fixture.file("SELECT typeof(count) || '/' || count FROM items WHERE id = 1") == "integer/9223372036854775807")
    }

    @Test func discardingAnInsertDropsWhatWasLaterDoneToItsObject() async throws {
        let fixture = try Fixture(rows: 0)
        let item = Item(id: 6, title: "", count: 0, note: "", score: 0, payload: nil, flag: false)
        try fixture.store.insert(item)
        try fixture.store.transaction {
            item.count = 13
            try fixture.store.insert(Item(id: 37, title: "", count: 0, note: "", score: 0, payload: nil, flag: false))
        }
        try fixture.other.execute("INSERT INTO items VALUES (6, 'theirs', 0, '', 0, NULL, 0, NULL)")
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.store.discard(try #require(fixture.store.pendingChanges.first { $0.error != nil }))
        #expect(!item._$tracking.isAttached)
        // Row 6 is the other connection's, untouched: the count set on our object went with it.
        #expect(try fixture.store.find(Item.self, key: 6)?.count == 0)
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title || '/' || count FROM items WHERE id = 6") == "theirs/0")
        #expect(try fixture.file("SELECT count(*) FROM items WHERE id = 37") == 1)
    }

    @Test func aCommitThatFailsAtItsEndKeepsEverythingPendingForTheNextFlush() async throws {
        let fault = FaultSlot()
        var configuration = Harness.configuration
        configuration.faultBeforeCommit = { fault.take() }
        let fixture = try Fixture(configuration: configuration)
        let item = try fixture.item(1)
        item.title = "kept"
        try fixture.store.insert(Item(id: 9, title: "new", count: 0, note: nil, score: 0, payload: nil, flag: false))
        for code in [ResultCode.full, .ioError, .busy] {
            fault.arm(SQLiteError(code: code, message: "injected").storeError)
            await #expect(throws: StoreError.self) { try await fixture.store.flush() }
            #expect(fixture.store.pendingChanges.count == 2)
            #expect(try fixture.file("SELECT title FROM items WHERE id = 1") == "Item 1")
        }
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 1") == "kept")
        #expect(try fixture.file("SELECT count(*) FROM items") == 6)
    }

    @Test func aRawSQLFetchSeesTheProgramsOwnChangesBeforeTheyAreFlushed() async throws {
        let fixture = try Fixture(rows: 3)
        try fixture.store.insert(Item(id: 7, title: "new\u{0}", count: 5, note: nil, score: .nan, payload: nil, flag: false))
        try fixture.store.delete(try fixture.item(2))
        try fixture.item(3).count = 9
        #expect(try fixture.store.fetch(Item.self, where: "count > ?", [0], orderBy: "count").map(\.id) == [7, 3])
        #expect(try fixture.store.fetch(Item.self, orderBy: "id").map(\.id) == [1, 3, 7])
        #expect(try fixture.store.count(Item.self, where: "title = ?", ["new\u{0}"]) == 1)
        #expect(try fixture.store.count(Item.self, where: "score > 0") == 2)
        try fixture.store.deleteAll(Item.self)
        #expect(try fixture.store.count(Item.self) == 0)
    }

    /// A refused update of a row another process then replaced (the object no longer shows
    /// the row), discarded: the live list kept the row by the discarded value, and the row's
    /// subscribers never heard it go back.
    @Test func discardingAnUpdateOfARowNoObjectShowsTellsLiveResultsAndSubscribers() async throws {
        let fixture = try Fixture(rows: 1)
        let item = try fixture.item(1)
        let busy = try fixture.store.results(for: FetchDescriptor<Item>(predicate: #Predicate { $0.count > 0 }))
        var heard: [Int] = []
        let token = try fixture.store.subscribe(to: .row(1, \Item.count)) { event in
            if let change = event.change(of: \Item.count) { heard.append(change.new) }
        }
        item.count = 13
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        #expect(busy.map(\.id) == [1])
        try await fixture.commit("DELETE FROM items WHERE id = 1; INSERT INTO items VALUES (1, 'again', 0, 'n', 0.5, NULL, 0, NULL)")
        #expect(!item._$tracking.isAttached)
        try fixture.store.discard(try #require(fixture.store.pendingChanges.first))
        #expect(busy.isEmpty)
        #expect(heard == [13, 0])
        // The worker's reload of the row tells nobody again, and the list agrees with a fetch.
        try await fixture.store.refreshExternalChanges()
        #expect(heard == [13, 0])
        #expect(busy.map(\.id) == (try fixture.store.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.count > 0 }))).map(\.id))
        token.cancel()
    }

    /// Found in review: a discarded update and delete of one row announced the row twice (back
    /// from the delete, then the update's cells going back with a stale old value).
    @Test func discardingAnUpdateAndADeleteOfARowAnnouncesItOnce() async throws {
        let fixture = try Fixture(rows: 1)
        let item = try fixture.item(1)
        var heard: [ChangeEvent.Kind] = []
        let token = try fixture.store.subscribe(to: .table(Item.self)) { heard.append($0.kind) }
        item.count = 5
        try fixture.store.delete(item)
        heard = []
        fixture.store.discardPendingChanges()
        try await fixture.store.refreshExternalChanges()
        #expect(heard == [.insert])
        #expect(try fixture.store.find(Item.self, key: 1)?.count == 0)
        token.cancel()
    }

    /// Found by the generator once it reads live lists inside transactions: the process
    /// trapped ("in the results but no longer in the database"), for the row was neither shown
    /// nor committed. The element is the row's object, detached, as the delete left it.
    @Test func readingALiveListInsideATransactionThatDeletedARowNotYetCommittedDoesNotTrap() async throws {
        let fixture = try Fixture(rows: 1)
        let list = try fixture.store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)]))
        let new = Item(key: 7, values: [.integer(7), .text("new"), .integer(0), .null, .real(0), .null, .integer(0), .null])
        try fixture.store.insert(new)
        try fixture.store.transaction {
            try fixture.store.delete(new)
            #expect(list.keys == [1, 7])
            #expect(list[1] === new)
            #expect(!new._$tracking.isAttached)
        }
        #expect(list.keys == [1])
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT count(*) FROM items") == .integer(1))
    }

    // MARK: - Found in review

    @Test func readingALiveListInsideATransactionThatDeletedItsRowsDoesNotTrap() async throws {
        let fixture = try Fixture(rows: 3)
        let list = try fixture.store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)]))
        try fixture.store.transaction {
            try fixture.store.deleteAll(Item.self)
            // The list hears of the deletion when the transaction ends; until then its
            // elements show the rows as committed, detached.
            #expect(list.first?.title == "Item 1")
            #expect(list.first.map { !$0._$tracking.isAttached } == true)
        }
        #expect(list.keys.isEmpty)
    }

    /// An object deleted and inserted again under another key in one transaction is that
    /// row's: a live list's element for its old row is not it, then or after.
    @Test func aListDoesNotShowAnObjectInsertedAgainUnderAnotherKeyForItsOldRow() async throws {
        let fixture = try Fixture(rows: 7)
        let list = try fixture.store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.id)]))
        let moved = try fixture.item(7)
        let replacement = Item(key: 7, values: [.integer(7), .text("replacement"), .integer(0), .null, .real(0), .null, .integer(0), .null])
        try fixture.store.transaction {
            try fixture.store.delete(moved)
            moved.id = 8
            try fixture.store.insert(moved)
            #expect(list[6] !== moved)
            #expect(list[6].id == 7)
            try fixture.store.insert(replacement)
        }
        #expect(list.keys == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(list[6] === replacement)
        #expect(list[7] === moved)
    }

    @Test func undoingADeleteKeepsTheChangesMadeBeforeIt() async throws {
        let fixture = try Fixture(rows: 3)
        let item = try fixture.item(2)
        item.title = "changed"
        try fixture.store.delete(item)
        let delete = try #require(fixture.store.pendingChanges.last)
        try fixture.store.discard(delete)
        #expect(try fixture.store.find(Item.self, key: 2)?.title == "changed")
        #expect(try fixture.store.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.title == "changed" })).map(\.id) == [2])
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 2") == "changed")
    }

    @Test func anInsertGivenTheKeyOfARowDeletedBeforeItStaysAttached() async throws {
        let fixture = try Fixture(rows: 1)
        try fixture.store.deleteAll(Item.self)
        let new = Item(id: nil, title: "new", count: 0, note: nil, score: 0, payload: nil, flag: false)
        try fixture.store.insert(new)
        try await fixture.store.flush()
        #expect(new.id == 1)
        #expect(new._$tracking.isAttached)
        new.title = "renamed"
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 1") == "renamed")
    }

    @Test func aRowDeletedAndInsertedAgainByAnotherProcessIsAnotherRow() async throws {
        var configuration = Harness.configuration
        configuration.wakesOnFileChanges = false
        let fixture = try Fixture(rows: 2, configuration: configuration)
        var heard: [ChangeEvent] = []
        let token = try fixture.store.subscribe(to: .table(Item.self)) { heard.append($0) }
        let old = try fixture.item(1)
        old.title = "ours, for the old row"
        // Both in one read of the log: the store must not take them for an update.
        try fixture.other.execute("BEGIN; DELETE FROM items WHERE id = 1; INSERT INTO items VALUES (1, 'theirs', 0, NULL, 0, NULL, 0, NULL); COMMIT")
        try await fixture.store.refreshExternalChanges()
        #expect(!old._$tracking.isAttached)
        #expect(fixture.store.pendingChanges.isEmpty)
        // Our assignment, then their new row as one update (title 'ours…' to 'theirs', …).
        #expect(heard.map(\.origin) == [.local, .external])
        #expect(heard.last?.kind == .update)
        #expect(heard.last?.changes.first { $0.column == "title" }?.new == "theirs")
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 1") == "theirs")
        #expect(try fixture.store.find(Item.self, key: 1)?.title == "theirs")
        token.cancel()
    }

    /// Found by the generator: a refused unit that stayed (its row gone for good) while a later
    /// one went to a commit that failed busy ended up after it, so the first refused change the
    /// program saw was not the first it made.
    @Test func changesHandedBackAfterABusyCommitKeepTheirPlaceBehindOnesThatStayed() async throws {
        let fixture = try Fixture(rows: 2)
        try fixture.item(1).count = 13
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try await fixture.commit("DELETE FROM items WHERE id = 1")
        try fixture.store.insert(Item(id: 9, title: "new", count: 13, note: nil, score: 0, payload: nil, flag: false))
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.other.execute("BEGIN IMMEDIATE")
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.other.execute("ROLLBACK")
        let refused = fixture.store.pendingChanges.filter { $0.error != nil }.map(\.description)
        #expect(refused.count == 2)
        #expect(refused.first?.hasPrefix("update items 1") == true, "\(refused)")
    }

    /// Found by the generator: discarding a refused transaction that changed a row this store
    /// inserts, not yet committed, left the row's object showing the discarded changes.
    @Test func discardingChangesToARowWhoseInsertIsPendingShowsTheInsertAgain() async throws {
        let fixture = try Fixture(rows: 0)
        let item = Item(id: 0, title: "", count: 0, note: "", score: 0, payload: Data(), flag: false)
        try fixture.store.insert(item)
        try fixture.store.transaction {
            try fixture.store.insert(Item(id: 12, title: "refused", count: 13, note: nil, score: 0, payload: nil, flag: true))
            item.score = 99.25
            try fixture.store.increment(\Item.count, of: item, by: -7)
        }
        // A bulk insert commits whole or not at all: the refusal keeps row 0's insert pending too.
        await #expect(throws: StoreError.self) {
            try await fixture.store.bulkInsert(contentsOf: [Item(id: 36, title: "bulk", count: 1, note: nil, score: 1, payload: nil, flag: true)])
        }
        let refused = try #require(fixture.store.pendingChanges.first { $0.error != nil })
        try fixture.store.discard(refused)
        try await fixture.store.refreshExternalChanges()
        #expect(item.count == 0 && item.score == 0)
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT count || '/' || score FROM items WHERE id = 0") == "0/0.0")
    }

    /// Found by the generator: the same, when another connection meanwhile committed a row of
    /// the pending insert's key: the discarded value stayed where a pending insert covers it.
    @Test func discardingAChangeAfterAnotherConnectionTookThePendingInsertsKeyShowsTheInsert() async throws {
        let fixture = try Fixture(rows: 0)
        let item = Item(id: 0, title: "", count: 0, note: "", score: 0, payload: Data(), flag: false)
        try fixture.store.insert(item)
        try fixture.store.transaction { item.payload = nil }
        item.count = 13
        await #expect(throws: StoreError.self) {
            try await fixture.store.bulkInsert(contentsOf: [Item(id: 36, title: "bulk", count: 1, note: nil, score: 1, payload: nil, flag: true)])
        }
        try fixture.other.execute("INSERT INTO items VALUES (0, '', 0, '', 0, x'', 0, NULL)")
        let refused = try #require(fixture.store.pendingChanges.first { $0.error != nil })
        try fixture.store.discard(refused)
        try await fixture.store.refreshExternalChanges()
        #expect(item.count == 0)
        #expect(item.payload == nil)
    }

    /// Found by the generator (stop 65), wrong in the reference: a handler told of the committed
    /// row that a discarded insert uncovered writes through the insert's object, which the
    /// discard has already detached. The reference judged the object managed before it took
    /// the discard, and kept a pending write the store rightly did not make.
    @Test func aHandlerWritingThroughTheObjectADiscardDetachedIsNotRecorded() async throws {
        try await replay([
            (49, 223_087_373_853, 717_350_413_136), (83, 646_811_080_919, 0), (56, 0, 0), (49, 157_103_427_383, 774_373_767_021), (67, 0, 0),
        ])
    }

    /// The store's side of the program above: the write stays on the detached object; nothing
    /// is pending, and the other connection's row keeps its title.
    @Test func aHandlerWritingThroughTheObjectOfADiscardedInsertStoresNothing() async throws {
        let fixture = try Fixture(rows: 0)
        let item = Item(id: 39, title: "mine", count: -97, note: nil, score: 1, payload: nil, flag: false)
        try fixture.store.insert(item)
        try fixture.other.execute("INSERT INTO items VALUES (39, 'theirs', 0, '', 0, x'', 0, NULL)")
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        var attachedWhenTold: [Bool] = []
        let token = try fixture.store.subscribe(to: .column(\Item.count)) { event in
            guard event.kind == .update, event.change(of: \Item.count)?.new == 0 else { return }
            attachedWhenTold.append(item._$tracking.isAttached)
            item.title = "heard 0"
        }
        try fixture.store.discard(try #require(fixture.store.pendingChanges.first { $0.error != nil }))
        token.cancel()
        #expect(attachedWhenTold == [false], "the handler was not told of the uncovered row, or the object was still attached")
        #expect(item.title == "heard 0" && !item._$tracking.isAttached)
        #expect(fixture.store.pendingChanges.isEmpty)
        #expect(try fixture.item(39).title == "theirs")
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 39") == .text("theirs"))
    }

    /// Found by the generator: a column of NUMERIC affinity keeps the real 0.0 as the integer 0,
    /// and another connection's replacement of the row (or update of the column) with the same
    /// values was heard as an update of `score` from 0.0 to 0.
    @Test func theSameNumberAsAnIntegerInsteadOfARealIsNoChange() async throws {
        var declaration = TableDeclaration.plain(.sqlite)
        declaration.scoreType = "DECIMAL(10,5)"
        let fixture = try Fixture(rows: 0, declaration: declaration)
        let item = Item(id: 0, title: "", count: 0, note: "", score: 0, payload: Data(), flag: false)
        try fixture.store.insert(item)
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT typeof(score) FROM items WHERE id = 0") == .text("integer"))
        var heard: [ChangeEvent] = []
        let token = try fixture.store.subscribe(to: .table(Item.self)) { heard.append($0) }
        try await fixture.commit("DELETE FROM items WHERE id = 0; INSERT INTO items VALUES (0, '', 0, '', 0.0, x'', 0, NULL)")
        try await fixture.commit("UPDATE items SET score = 0.0 WHERE id = 0")
        #expect(heard.isEmpty, "\(heard)")
        #expect(item.score == 0)
        token.cancel()
    }

    /// Found by the generator: a change refused while its row was there stayed pending after
    /// another connection deleted the row; a later insert that SQLite gave the same key must
    /// not show it (it is another row), and the change is refused for good.
    @Test func aRefusedChangeOfARowAnotherConnectionDeletedIsNotLaidOverALaterRowOfItsKey() async throws {
        try await replay([(61, 0, 0), (0, 0, 4_479_254_018), (93, 0, 0), (87, 0, 0), (38, 0, 0)])
    }

    /// A refused transaction that changed a row another connection then deleted and inserted
    /// again is refused for good: fixing its refused value must not commit its change of the
    /// old row onto the new one.
    @Test func aRefusedChangeOfARowDeletedMeanwhileIsNotRetriedOnItsSuccessor() async throws {
        let fixture = try Fixture(rows: 2)
        let refused = Item(id: 9, title: "refused", count: 13, note: nil, score: 0, payload: nil, flag: false)
        try fixture.store.transaction {
            try fixture.item(1).title = "for the old row 1"
            try fixture.store.insert(refused)
        }
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try await fixture.commit("DELETE FROM items WHERE id = 1; INSERT INTO items VALUES (1, 'another row', 0, 'n', 0.5, NULL, 0, NULL)")
        refused.count = 0
        let error = await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        #expect(error?.message.contains("trying again cannot help") == true, "\(String(describing: error))")
        #expect(try fixture.file("SELECT title FROM items WHERE id = 1") == .text("another row"))
        #expect(try fixture.store.find(Item.self, key: 1)?.title == "another row")
        #expect(try fixture.store.fetchCount(FetchDescriptor<Item>(predicate: #Predicate { $0.title == "for the old row 1" })) == 0)
    }

    /// Found by review: another connection's delete and insert of a row, heard in the same poll
    /// as a bulk insert into the table (known only as a whole), lost that the row is another
    /// row: the program's change of the old row then committed onto the new one.
    @Test func aRowReplacedInTheSamePollAsABulkInsertIsAnotherRow() async throws {
        let fixture = try Fixture()
        let item = try fixture.item(5)
        item.title = "for the old row 5"
        try fixture.other.execute("DELETE FROM items WHERE id = 5; INSERT INTO items VALUES (5, 'another row', 0, 'n', 0.5, NULL, 0, NULL)")
        try fixture.other.execute("BEGIN IMMEDIATE")
        try ChangeLog.insertingInBulk(into: "items", on: fixture.other) {
            try fixture.other.execute("INSERT INTO items VALUES (6, 'bulk', 0, 'n', 0.5, NULL, 0, NULL)")
        }
        try fixture.other.execute("COMMIT")
        try await fixture.store.refreshExternalChanges()
        #expect(!item._$tracking.isAttached)
        #expect(fixture.store.pendingChanges.isEmpty)
        try await fixture.store.flush()
        #expect(try fixture.file("SELECT title FROM items WHERE id = 5") == .text("another row"))
        #expect(try fixture.store.find(Item.self, key: 6)?.title == "bulk")
    }

    /// Found by review: a change refused because the database found its row gone, before the
    /// store heard that it went, keeps the row's later changes behind it: none commits onto a
    /// row of that key another connection inserts meanwhile.
    @Test func changesBehindOneThatFoundItsRowGoneDoNotCommitOntoANewRowOfItsKey() async throws {
        var configuration = Harness.configuration
        configuration.observesExternalChanges = false
        let fixture = try Fixture(configuration: configuration)
        let item = try fixture.item(5)
        try fixture.other.execute("DELETE FROM items WHERE id = 5")
        item.title = "for the old row 5"
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        item.count = 3
        try fixture.other.execute("INSERT INTO items VALUES (5, 'another row', 0, 'n', 0.5, NULL, 0, NULL)")
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        #expect(try fixture.file("SELECT count || title FROM items WHERE id = 5") == .text("0another row"))
    }

    /// Found by the generator (stop 41, shrunk from 17 steps): a pending delete of a row that
    /// another connection's `TRUNCATE` removed, held behind a refused change, stayed pending
    /// when the program's object of the row had been inserted again; the re-insert waited
    /// behind the delete and never committed. Heard row by row such a delete was dropped, heard
    /// through the reset's reload only where no object showed the row.
    @Test(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server"))
    func aPendingDeleteOfARowATruncateRemovedIsDroppedThoughItsObjectInsertedItAgain() async throws {
        try await replay(table: 1_568_070_924, on: .postgres, [
            (86, 76_083_481_313, 0), (38, 0, 0), (39, 0, 0), (35, 0, 1_068_338_451_336), (17, 0, 225_374_958_324),
            (33, 424_374_609_259, 0), (45, 376_585_188_792, 0), (62, 690_515_772_196, 696_594_971_940), (118, 986_385_878_703, 0),
        ])
    }
}
