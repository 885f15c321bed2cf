import Logging

extension ModelStore {
    /// Refuses models whose to-one relationships point at a model the store does not manage.
    static func checkRelationships(of models: [any TrackedModel.Type]) throws {
        let managed = Set(models.map { ObjectIdentifier($0) })
        for model in models {
            for column in model._$schema.columns {
                guard let reference = column.reference, !managed.contains(reference.model) else { continue }
                throw StoreError(
                    code: .modelNotRegistered,
                    message: "\(model).\(column.property) points at \(reference.modelName), which is not one of this store's models; pass \(reference.modelName) in `models:` too"
                )
            }
        }
    }

    /// The object of a row a to-one relationship points at, loaded as ``find(_:key:)`` loads
    /// it; `nil` when there is no such row. A read that fails is logged and gives `nil`: a
    /// property read cannot throw (fetch the target to see the error).
    func loadRelatedObject(table: Int, key: SQLValue) -> (any TrackedModel)? {
        guard !isClosed else { return nil }
        func load<Model: TrackedModel>(_ type: Model.Type) throws -> Model? {
            try currentValues(table: table, key: key).map { try object(type, table: table, values: $0) }
        }
        do {
            return try load(registrar.types[table])
        } catch {
            logger.error("cannot load the \(registrar.types[table]) with key \(key) that a relationship points at: \(error)")
            return nil
        }
    }
}
