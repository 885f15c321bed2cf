import Foundation

/// Checks of the process's raw arguments, before they are decoded as Swift strings (which
/// would turn invalid UTF-8 into U+FFFD, so that `--db $'u\xff.db'` named another file).
enum RawArguments {
    /// The first argument that is not valid UTF-8, with its invalid bytes shown as `\xNN`.
    static func firstInvalidUTF8() -> String? {
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            if String(validating: bytes, as: UTF8.self) == nil {
                return bytes.map { $0 < 0x80 ? String(UnicodeScalar($0)) : String(format: "\\x%02x", $0) }.joined()
            }
        }
        return nil
    }
}
