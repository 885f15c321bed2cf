import Foundation
import Testing
@testable import TrackedModels

@MainActor
@Suite struct ColumnValueTests {
    private func roundTrip(_ sample: Sample) async throws -> Sample {
        let directory = try TemporaryDirectory()
        let path = directory.path("samples.sqlite")
        let store = try ModelStore(.file(path), models: [Sample.self], configuration: Stores.configuration())
        try store.insert(sample)
        try await store.flush()
        let id = try #require(sample.id)
        try await store.close()
        let reopened = try ModelStore(.file(path), models: [Sample.self], configuration: Stores.configuration())
        let read = try #require(try reopened.find(Sample.self, key: id))
        #expect(read !== sample)
        return read
    }

    private func makeSample(double: Double = 1.5) -> Sample {
        Sample(
            flag: true, int: Int.min, int64: Int64.max, int32: Int32.min, double: double,
            string: "héllo, 世界 👋🏽 'quoted' \"double\"", data: Data([0, 1, 2, 255]),
            date: Date(timeIntervalSince1970: 1_700_000_000.123456), uuid: UUID(),
            priority: .high, mood: .excited
        )
    }

    @Test func everyTypeRoundTrips() async throws {
        let sample = makeSample()
        sample.optionalFlag = false
        sample.optionalInt = Int.max
        sample.optionalInt64 = Int64.min
        sample.optionalInt32 = Int32.max
        sample.optionalDouble = -0.25
        sample.optionalString = ""
        sample.optionalData = Data()
        sample.optionalDate = Date(timeIntervalSince1970: 0)
        sample.optionalUUID = UUID()
        sample.optionalPriority = .low
        let read = try await roundTrip(sample)
        #expect(sample.id != nil)
        #expect(read.id == sample.id)
        #expect(read.flag == true)
        #expect(read.int == Int.min)
        #expect(read.int64 == Int64.max)
        #expect(read.int32 == Int32.min)
        #expect(read.double == 1.5)
        #expect(read.string == sample.string)
        #expect(read.data == Data([0, 1, 2, 255]))
        #expect(abs(read.date.timeIntervalSince1970 - sample.date.timeIntervalSince1970) < 1e-6)
        #expect(read.uuid == sample.uuid)
        #expect(read.priority == .high)
        #expect(read.mood == .excited)
        #expect(read.optionalFlag == false)
        #expect(read.optionalInt == Int.max)
        #expect(read.optionalInt64 == Int64.min)
        #expect(read.optionalInt32 == Int32.max)
        #expect(read.optionalDouble == -0.25)
        #expect(read.optionalString == "")
        #expect(read.optionalData == Data())
        #expect(read.optionalDate == Date(timeIntervalSince1970: 0))
        #expect(read.optionalUUID == sample.optionalUUID)
        #expect(read.optionalPriority == .low)
    }

    @Test func nilsRoundTripAsNull() async throws {
        let read = try await roundTrip(makeSample())
        #expect(read.optionalFlag == nil)
        #expect(read.optionalInt == nil)
        #expect(read.optionalInt64 == nil)
        #expect(read.optionalInt32 == nil)
        #expect(read.optionalDouble == nil)
        #expect(read.optionalString == nil)
        #expect(read.optionalData == nil)
        #expect(read.optionalDate == nil)
        #expect(read.optionalUUID == nil)
        #expect(read.optionalPriority == nil)
    }

    @Test func negativeZeroReadsBackAsZero() async throws {
        // SQLite keeps an integral REAL as an integer on disk, which has no sign of zero.
        let read = try await roundTrip(makeSample(double: -0.0))
        #expect(read.double == 0)
        #expect(read.double.sign == .plus)
    }

    @Test(arguments: [Double.infinity, -Double.infinity, Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude])
    func extremeDoublesRoundTrip(_ value: Double) async throws {
        let read = try await roundTrip(makeSample(double: value))
        #expect(read.double == value)
        #expect(read.double.sign == value.sign)
    }

    @Test func nanIsRefusedAtFlushAndStaysPendingUntilReplaced() async throws {
        let store = try ModelStore(.inMemory, models: [Sample.self], configuration: Stores.configuration())
        let sample = makeSample()
        try store.insert(sample)
        sample.double = .nan
        do {
            try await store.flush()
            Issue.record("a NaN was stored")
        } catch let error as StoreError where error.code == .changeRejected {
            // expected: the store names the problem and keeps the change
            #expect((error.underlying as? StoreError)?.code == .valueNotStorable)
            #expect(error.message.contains("samples"))
            #expect(error.message.contains("double = nan (real)"))
        }
        #expect(store.pendingChanges.count == 1)
        #expect(store.pendingChanges[0].operations[0].contains("double = nan"))
        #expect(store.pendingChanges[0].error?.code == .changeRejected)
        sample.double = 2
        try await store.flush()
        #expect(!store.hasPendingChanges)
        #expect(try store.count(Sample.self, where: "double = 2") == 1)
    }

    @Test func unknownRawValueIsADecodingError() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("samples.sqlite")
        let store = try ModelStore(.file(path), models: [Sample.self], configuration: Stores.configuration())
        try store.insert(makeSample())
        try await store.close()
        try Peek(path).execute("UPDATE samples SET priority = 7")
        let reopened = try ModelStore(.file(path), models: [Sample.self], configuration: Stores.configuration())
        #expect {
            try reopened.fetch(Sample.self)
        } throws: { error in
            let error = error as? StoreError
            return error?.code == .decodingFailed && error?.message.contains("samples.priority") == true
        }
    }
}
