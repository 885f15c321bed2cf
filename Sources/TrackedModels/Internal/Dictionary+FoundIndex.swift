extension Dictionary {
    /// Sets the value of `key` (nil removes it), where `index` is what `index(forKey:)` found
    /// for it: a key already there is not hashed again. The live forms find a member once per
    /// change, in dictionaries large enough that each hash is likely a cache miss.
    ///
    /// ```swift
    /// let member = members.index(forKey: key)
    /// let old = member.map { members.values[$0] }
    /// members.setValue(new, forKey: key, foundAt: member)
    /// ```
    mutating func setValue(_ value: Value?, forKey key: Key, foundAt index: Index?) {
        switch (index, value) {
        case (let index?, let value?): values[index] = value
        case (let index?, nil): remove(at: index)
        case (nil, let value?): self[key] = value
        case (nil, nil): break
        }
    }
}
