/// A sum of integers and finite doubles kept exactly, whatever the order of additions and
/// removals, and read as one correctly rounded `Double` (or as the exact integer, where every
/// value was one).
///
/// The sum is a two's-complement fixed-point number whose lowest bit is 2⁻¹⁰⁷⁴ (the smallest
/// subnormal double) and whose range holds 2⁴⁰ values of the largest magnitude: adding or
/// removing a value touches the two words it spans, and a carry runs on only as far as it
/// must.
///
/// ```swift
/// var sum = ExactSum()
/// sum.add(.real(1e300)); sum.add(.real(1)); sum.remove(.real(1e300))
/// sum.double    // 1.0, exactly: no rounding error is left behind
/// ```
struct ExactSum: Equatable {
    /// Bit 0 weighs 2⁻¹⁰⁷⁴.
    private static let unitExponent = -1074
    private static let wordCount = 36
    private var words = [UInt64](repeating: 0, count: ExactSum.wordCount)

    mutating func add(_ value: SQLValue) { change(by: value, negated: false) }
    mutating func remove(_ value: SQLValue) { change(by: value, negated: true) }

    /// The sum as an integer, where it is a whole number within Int64's range.
    var integer: Int64? {
        let negative = isNegative
        let magnitude = negative ? negated(words) : words
        // Whole: no bit below 2⁰ (bit 1074); small: nothing from 2⁶³ up, but -2⁶³ itself.
        let lowWord = -Self.unitExponent / 64, lowBit = -Self.unitExponent % 64
        guard magnitude[..<lowWord].allSatisfy({ $0 == 0 }), magnitude[lowWord] & ((1 << lowBit) - 1) == 0 else { return nil }
        let value = magnitude[lowWord] >> lowBit | magnitude[lowWord + 1] << (64 - lowBit)
        guard magnitude[(lowWord + 1)...].enumerated().allSatisfy({ $0.offset == 0 ? $0.element >> lowBit == 0 : $0.element == 0 }) else { return nil }
        if negative { return value <= 1 << 63 ? Int64(truncatingIfNeeded: 0 &- value) : nil }
        return value < 1 << 63 ? Int64(value) : nil
    }

    /// The sum rounded once to the nearest double (ties to even): ±infinity past the largest.
    var double: Double {
        let negative = isNegative
        let magnitude = negative ? negated(words) : words
        guard let word = magnitude.lastIndex(where: { $0 != 0 }) else { return 0 }
        let highest = word * 64 + (63 - magnitude[word].leadingZeroBitCount)
        let result: Double
        if highest < 64 {
            // Fewer than 64 bits: converted with one rounding, and scaled exactly (a result
            // this small is a subnormal, or a normal whose every bit fits).
            result = Double(sign: .plus, exponent: Self.unitExponent, significand: Double(magnitude[0]))
        } else {
            // The top 64 bits, and whether any bit below them is set (which breaks a tie: the
            // 64th bit is below the 53 a double keeps).
            let shift = highest - 63
            var top = bits(magnitude, from: shift)
            if hasBit(magnitude, below: shift) { top |= 1 }
            result = Double(sign: .plus, exponent: shift + Self.unitExponent, significand: Double(top))
        }
        return negative ? -result : result
    }

    private var isNegative: Bool { words[Self.wordCount - 1] >> 63 == 1 }

    private mutating func change(by value: SQLValue, negated: Bool) {
        switch value {
        case .integer(let integer):
            // |Int64.min| is 2⁶³, which UInt64 holds.
            place(integer.magnitude, at: -Self.unitExponent, negative: (integer < 0) != negated)
        case .real(let real) where real.isFinite && real != 0:
            let exponent = real.exponent - Int(Double.significandBitCount)
            var significand = real.significandBitPattern
            if real.isNormal { significand |= 1 << UInt64(Double.significandBitCount) }
            // A subnormal's exponent is that of the smallest normal.
            let position = (real.isNormal ? exponent : Int(Double.leastNormalMagnitude.exponent) - Int(Double.significandBitCount)) - Self.unitExponent
            place(significand, at: position, negative: (real < 0) != negated)
        default:
            return
        }
    }

    /// Adds or subtracts `magnitude × 2^position` (in units of the lowest bit).
    private mutating func place(_ magnitude: UInt64, at position: Int, negative: Bool) {
        let word = position / 64, shift = position % 64
        let low = magnitude << shift
        let high = shift == 0 ? 0 : magnitude >> (64 - shift)
        var carry = false
        for (index, part) in [(word, low), (word + 1, high)] where index < Self.wordCount {
            carry = apply(part, at: index, negative: negative, carry: carry)
        }
        var index = word + 2
        while carry, index < Self.wordCount {
            carry = apply(0, at: index, negative: negative, carry: true)
            index += 1
        }
    }

    /// Adds (or subtracts) a word and an incoming carry (or borrow); returns the outgoing one.
    private mutating func apply(_ part: UInt64, at index: Int, negative: Bool, carry: Bool) -> Bool {
        let incoming: UInt64 = carry ? 1 : 0
        if negative {
            let (first, borrowed) = words[index].subtractingReportingOverflow(part)
            let (second, borrowedAgain) = first.subtractingReportingOverflow(incoming)
            words[index] = second
            return borrowed || borrowedAgain
        }
        let (first, overflowed) = words[index].addingReportingOverflow(part)
        let (second, overflowedAgain) = first.addingReportingOverflow(incoming)
        words[index] = second
        return overflowed || overflowedAgain
    }

    private func negated(_ words: [UInt64]) -> [UInt64] {
        var result = words.map { ~$0 }
        for index in result.indices {
            let (sum, overflow) = result[index].addingReportingOverflow(1)
            result[index] = sum
            if !overflow { break }
        }
        return result
    }

    /// The 64 bits from bit `shift` up.
    private func bits(_ words: [UInt64], from shift: Int) -> UInt64 {
        let word = shift / 64, offset = shift % 64
        let low = words[word] >> offset
        guard offset > 0, word + 1 < words.count else { return low }
        return low | words[word + 1] << (64 - offset)
    }

    private func hasBit(_ words: [UInt64], below shift: Int) -> Bool {
        let word = shift / 64, offset = shift % 64
        return words[..<word].contains { $0 != 0 } || (offset > 0 && words[word] & ((1 << offset) - 1) != 0)
    }
}
