import Foundation
import PropertyBased
import Testing
@testable import TrackedModels

/// Live aggregates' contracts on a real file, and the exact sum behind sums and averages,
/// checked against sums an integer can hold exactly.
@MainActor
@Suite struct LiveAggregateTests {
    /// 100 rows, counts 0...99; observed as a view would.
    @MainActor final class Workload {
        let directory: TemporaryDirectory
        let store: ModelStore
        let rows: [Row]

        init() async throws {
            directory = try TemporaryDirectory()
            store = try ModelStore(.file(directory.path("model.sqlite")), models: [Row.self], configuration: Stores.configuration())
            try store.insert(contentsOf: (0..<100).map { Row(id: $0, title: "Row \($0)", count: Int($0)) })
            try await store.flush()
            rows = try store.fetch(Row.self, orderBy: "id")
        }
    }

    @Test func eachAggregateFollowsAChangeOfOneRow() async throws {
        let workload = try await Workload()
        let store = workload.store
        let busy = try store.aggregate(.count, of: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 90 }))
        let total = try store.aggregate(.sum(\.count), of: FetchDescriptor<Row>())
        let average = try store.aggregate(.average(\.count), of: FetchDescriptor<Row>(predicate: #Predicate { $0.count < 10 }))
        let top = try store.aggregate(.maximum(\.count), of: FetchDescriptor<Row>())
        let first = try store.aggregate(.minimum(\.title), of: FetchDescriptor<Row>())
        #expect(busy.value == 9 && total.value == 4_950 && average.value == 4.5 && top.value == 99 && first.value == "Row 0")
        workload.rows[5].count = 1_000
        #expect(busy.value == 10 && total.value == 5_945 && average.value == 40.0 / 9 && top.value == 1_000)
        workload.rows[5].count = 5
        try store.delete(workload.rows[99])
        try store.insert(Row(id: 500, title: "A row", count: -7))
        #expect(busy.value == 8 && total.value == 4_844 && top.value == 98 && first.value == "A row")
        #expect(average.value == Double(45 - 7) / 11)
        try await store.flush()
        #expect(try store.fetchCount(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 90 })) == busy.value)
    }

    @Test func aChangeThatLeavesTheValueNotifiesNobody() async throws {
        let workload = try await Workload()
        let total = try workload.store.aggregate(.sum(\.count), of: FetchDescriptor<Row>())
        let busy = try workload.store.aggregate(.count, of: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
        let heardTotal = ObservationCount(), heardBusy = ObservationCount()
        heardTotal.follow { _ = total.value }
        heardBusy.follow { _ = busy.value }
        try workload.store.transaction {
            workload.rows[1].count += 5
            workload.rows[2].count -= 5          // the sum is as it was; row 2 leaves
        }
        workload.rows[3].title = "retitled"      // a column no aggregate reads
        for _ in 0..<5 { await Task.yield() }
        #expect(total.value == 4_950 && busy.value == 98)
        #expect(heardTotal.count == 0)
        #expect(heardBusy.count == 1)
    }

    @Test func anotherProcessesCommitAndAResetAreFollowed() async throws {
        let workload = try await Workload()
        let total = try workload.store.aggregate(.sum(\.count), of: FetchDescriptor<Row>())
        let other = try Connection(filename: workload.directory.path("model.sqlite"), mode: .readWrite, busyTimeout: .seconds(5))
        try other.execute("UPDATE rows SET count = count + 1 WHERE id < 10")
        try await workload.store.refreshExternalChanges()
        #expect(total.value == 4_960)
        try other.execute("DELETE FROM rows")
        try await workload.store.refreshExternalChanges()
        #expect(total.value == 0)
    }

    @Test func anIntegerSumThatLeavesItsTypeIsNilAndComesBack() async throws {
        let workload = try await Workload()
        let total = try workload.store.aggregate(.sum(\.count), of: FetchDescriptor<Row>(predicate: #Predicate { $0.id < 2 }))
        workload.rows[0].count = .max
        workload.rows[1].count = 1
        #expect(total.value == nil)
        workload.rows[1].count = -1
        #expect(total.value == .max - 1)
    }

    @Test func aDescriptorWithAWindowIsRefusedSayingWhy() async throws {
        let workload = try await Workload()
        var descriptor = FetchDescriptor<Row>()
        descriptor.fetchLimit = 3
        let error = #expect(throws: StoreError.self) { try workload.store.aggregate(.count, of: descriptor) }
        #expect(error?.code == .unsupportedPredicate)
        #expect(error?.message.contains("fetchLimit or a fetchOffset; set both to nil") == true)
    }

    // MARK: - The exact sum

    @Test func additionsAndRemovalsLeaveNoRoundingBehind() {
        var sum = ExactSum()
        sum.add(.real(1e300))
        sum.add(.real(1))
        sum.add(.real(.leastNonzeroMagnitude))
        sum.remove(.real(1e300))
        #expect(sum.double == 1)
        sum.remove(.real(1))
        #expect(sum.double == .leastNonzeroMagnitude)
        sum.remove(.real(.leastNonzeroMagnitude))
        sum.add(.real(.greatestFiniteMagnitude))
        sum.add(.real(.greatestFiniteMagnitude))
        #expect(sum.double == .infinity)
        sum.remove(.real(.greatestFiniteMagnitude))
        #expect(sum.double == .greatestFiniteMagnitude)
        sum.add(.integer(.min))
        sum.remove(.real(.greatestFiniteMagnitude))
        #expect(sum.integer == .min)
        #expect(sum.double == -0x1p63)
    }

    /// Values that are whole multiples of 2⁻¹⁰ (or of the smallest subnormal): their exact sum
    /// is an integer times that unit, which one conversion rounds correctly.
    @Test func aSumIsTheExactSumRoundedOnce() async {
        let values = Gen.int64(in: -(1 << 60)...(1 << 60)).array(of: 1...60)
        await propertyCheck(count: 300, input: values, Gen.bool) { multiples, subnormal in
            let unit = subnormal ? Double.leastNonzeroMagnitude : 0x1p-10
            var sum = ExactSum()
            for multiple in multiples { sum.add(.real(Double(multiple) * unit)) }
            // A multiple past 2⁵³ is rounded as a double: the exact sum is of the rounded ones.
            let rounded = multiples.map { Int64(Double($0)) }
            let (total, overflow) = rounded.reduce((Int64(0), false)) { partial, value in
                let (next, over) = partial.0.addingReportingOverflow(value)
                return (next, partial.1 || over)
            }
            guard !overflow else { return }
            #expect(sum.double == Double(total) * unit, "sum of \(multiples) × \(unit)")
            for multiple in multiples { sum.remove(.real(Double(multiple) * unit)) }
            #expect(sum.double == 0 && sum.integer == 0)
        }
    }
}
