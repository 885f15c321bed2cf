import Testing

@Suite struct TrackedMacroExpansionTests {
    @Test func expandsAModel() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            public final class Row {
                @PrimaryKey var id: Int64
                @Column("label") var title: String
                var count: Int = 0
                @Transient var isSelected = false
            }
            """,
            expandedSource: """
            public final class Row {
                @TrackedModels._TrackedColumn(0) var id: Int64
                @TrackedModels._TrackedColumn(1) var title: String
                @TrackedModels._TrackedColumn(2)
                var count: Int = 0
                @TrackedModels._TrackedTransient var isSelected = false

                private let _$observationRegistrar = Observation.ObservationRegistrar()

                public let _$tracking = TrackedModels.ModelTracking()

                public static let _$schema = TrackedModels.TableSchema(
                    name: "rows",
                    columns: [
                        TrackedModels.ColumnSchema(name: nil, property: "id", Int64.self, isPrimaryKey: true),
                        TrackedModels.ColumnSchema(name: "label", property: "title", String.self),
                        TrackedModels.ColumnSchema(name: nil, property: "count", Int.self)
                    ],
                    relationships: []
                )

                public required init(_$row row: TrackedModels.ModelRow) throws {
                    self._id = try row.decode(at: 0)
                    self._title = try row.decode(at: 1)
                    self._count = try row.decode(at: 2)
                    self._$tracking.adoptForeignKeys(from: row)
                }

                public func _$values() -> [TrackedModels.SQLValue] {
                    [TrackedModels._$storedValue(self._id, column: 0, tracking: self._$tracking), TrackedModels._$storedValue(self._title, column: 1, tracking: self._$tracking), TrackedModels._$storedValue(self._count, column: 2, tracking: self._$tracking)]
                }

                public func _$value(ofColumn index: Swift.Int) -> TrackedModels.SQLValue {
                    switch index {
                    case 0:
                        TrackedModels._$storedValue(self._id, column: 0, tracking: self._$tracking)
                    case 1:
                        TrackedModels._$storedValue(self._title, column: 1, tracking: self._$tracking)
                    case 2:
                        TrackedModels._$storedValue(self._count, column: 2, tracking: self._$tracking)
                    default:
                        .null
                    }
                }

                public func _$assign(_ value: TrackedModels.SQLValue, toColumn index: Swift.Int) throws {
                    switch index {
                    case 0:
                        let decoded: Int64 = try TrackedModels._$decode(value, current: self._id, column: 0, tracking: self._$tracking)
                        withMutation(keyPath: \\.id) {
                            self._id = decoded
                        }
                    case 1:
                        let decoded: String = try TrackedModels._$decode(value, current: self._title, column: 1, tracking: self._$tracking)
                        withMutation(keyPath: \\.title) {
                            self._title = decoded
                        }
                    case 2:
                        let decoded: Int = try TrackedModels._$decode(value, current: self._count, column: 2, tracking: self._$tracking)
                        withMutation(keyPath: \\.count) {
                            self._count = decoded
                        }
                    default:
                        break
                    }
                }

                public func _$relatedObject(column index: Swift.Int) -> (any TrackedModels.TrackedModel)? {
                    switch index {
                    case 0:
                        TrackedModels._$relatedObject(self._id)
                    case 1:
                        TrackedModels._$relatedObject(self._title)
                    case 2:
                        TrackedModels._$relatedObject(self._count)
                    default:
                        nil
                    }
                }

                public func _$setRelatedObject(_ object: (any TrackedModels.TrackedModel)?, column index: Swift.Int) {
                    switch index {
                    case 0:
                        withMutation(keyPath: \\.id) {
                            TrackedModels._$setRelatedObject(object, in: &self._id)
                        }
                    case 1:
                        withMutation(keyPath: \\.title) {
                            TrackedModels._$setRelatedObject(object, in: &self._title)
                        }
                    case 2:
                        withMutation(keyPath: \\.count) {
                            TrackedModels._$setRelatedObject(object, in: &self._count)
                        }
                    default:
                        break
                    }
                }

                public func _$childrenChanged(relationship index: Swift.Int) {
                    switch index {

                    default:
                        break
                    }
                }

                public func _$pendingChildren(relationship index: Swift.Int) -> [any TrackedModels.TrackedModel] {
                    switch index {

                    default:
                        []
                    }
                }

                public var _$primaryKey: TrackedModels.SQLValue {
                    TrackedModels._$storedValue(self._id, column: 0, tracking: self._$tracking)
                }

                public typealias PrimaryKeyValue = Int64

                public static func _$columnIndex(of keyPath: Swift.AnyKeyPath) -> Swift.Int? {
                    switch keyPath {
                    case \\Row.id:
                        0
                    case \\Row.title:
                        1
                    case \\Row.count:
                        2
                    default:
                        nil
                    }
                }

                public static var _$columnKeyPaths: [Swift.AnyKeyPath] {
                    [\\Row.id, \\Row.title, \\Row.count]
                }

                public static var _$chainedKeyPaths: [Swift.AnyKeyPath] {
                    [\\Row?.?.id, \\Row?.?.title, \\Row?.?.count]
                }

                internal nonisolated func access<Member>(keyPath: Swift.KeyPath<Row, Member>) {
                    _$observationRegistrar.access(self, keyPath: keyPath)
                }

                internal nonisolated func withMutation<Member, MutationResult>(
                    keyPath: Swift.KeyPath<Row, Member>,
                    _ mutation: () throws -> MutationResult
                ) rethrows -> MutationResult {
                    try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
                }

                public init(id: Int64, title: String, count: Int = 0) {
                    self.id = id
                    self.title = title
                    self.count = count
                }
            }

            extension Row: TrackedModels.TrackedModel, Observation.Observable {
            }
            """
        )
    }

    @Test func routesAColumnThroughTheRegistrar() {
        assertExpansion(
            """
            final class Row {
                @_TrackedColumn(2) var count: Int = 0
            }
            """,
            expandedSource: """
            final class Row {
                var count: Int {
                    @storageRestrictions(initializes: _count)
                    init(initialValue) {
                        _count = initialValue
                    }
                    get {
                        _$tracking.access(column: 2)
                        access(keyPath: \\.count)
                        return TrackedModels._$read(_count, column: 2, tracking: _$tracking) {
                            _count = $0
                        }
                    }
                    set {
                        guard !TrackedModels._$isSameStoredValue(_count, newValue, column: 2, tracking: _$tracking) else {
                            return
                        }
                        let oldValue = _count
                        withMutation(keyPath: \\.count) {
                            _count = newValue
                        }
                        _$tracking.userDidSet(self, column: 2, from: oldValue, to: newValue)
                    }
                }

                private var _count: Int = 0
            }
            """
        )
    }

    @Test func observesATransientPropertyWithoutStoringIt() {
        assertExpansion(
            """
            final class Row {
                @_TrackedTransient var isSelected = false
            }
            """,
            expandedSource: """
            final class Row {
                var isSelected {
                    @storageRestrictions(initializes: _isSelected)
                    init(initialValue) {
                        _isSelected = initialValue
                    }
                    get {
                        access(keyPath: \\.isSelected)
                        return _isSelected
                    }
                    set {
                        withMutation(keyPath: \\.isSelected) {
                            _isSelected = newValue
                        }
                    }
                }

                private var _isSelected = false
            }
            """
        )
    }
}
