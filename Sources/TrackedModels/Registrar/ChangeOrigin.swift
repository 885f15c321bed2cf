/// Where a change came from.
public enum ChangeOrigin: Sendable, Hashable {
    /// This program changed the value through a tracked property.
    case local
    /// The database changed under the store: another process or connection committed it, or a
    /// commit of this store's writer returned a different value (a counter others also bumped).
    case external
}
