import Foundation
@testable import TrackedModels

extension Item {
    /// A property that is no column: a sort by it has no translation.
    var titleLength: Int { title.count }
}

/// Descriptors the store cannot translate: every read form refuses them alike, saying what to
/// use instead, and nothing changes.
extension Harness {
    func fetchWithUntranslatableDescriptor(_ a: UInt64) async throws {
        let store = try live
        var descriptor = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.title, comparator: .lexical)])
        let expected: String
        switch a % 4 {
        case 0:
            descriptor.fetchLimit = -1 - Int(a / 4 % 3)
            expected = "fetchLimit is \(descriptor.fetchLimit!)"
        case 1:
            descriptor.fetchOffset = -1 - Int(a / 4 % 3)
            expected = "fetchOffset is \(descriptor.fetchOffset!)"
        case 2:
            descriptor.predicate = #Predicate { $0.titleLength > 3 }
            expected = "which is not a stored column of the model), which has no exact SQL translation"
        default:
            descriptor.sortBy = [SortDescriptor(\.titleLength)]
            expected = "names neither a stored column nor a column of a to-one relationship's target"
        }
        let form = Int(a / 16 % 3)
        note("\(["fetch", "fetchCount", "results"][form]) with a descriptor whose \(expected.prefix(40))…")
        do {
            switch (form, engine) {
            case (0, .sqlite): _ = try store.fetch(descriptor)
            case (0, .postgres): _ = try await store.async.fetch(descriptor)
            case (1, .sqlite): _ = try store.fetchCount(descriptor)
            case (1, .postgres): _ = try await store.async.fetchCount(descriptor)
            case (_, .sqlite): _ = try store.results(for: descriptor)
            case (_, .postgres): _ = try await store.async.results(for: descriptor)
            }
            throw Divergence(message: "a descriptor whose \(expected) was accepted")
        } catch let error as StoreError where error.code == .unsupportedPredicate {
            guard error.message.contains(expected) else {
                throw Divergence(message: "the refusal of a descriptor whose \(expected) says: \(error.message)")
            }
        }
    }
}
