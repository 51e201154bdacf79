/// GPT-2's reversible map between bytes and printable Unicode characters (`bytes_to_unicode` in
/// openai/gpt-2's encoder.py): the printable Latin-1 bytes stand for themselves, the other 68
/// bytes (controls, space, DEL, NBSP, soft hyphen) take U+0100… in byte order. Byte-level BPE
/// vocabularies are written in these characters (`Ġ` is a space, `Ċ` a newline).
enum ByteLevelAlphabet {
    /// The character standing for each byte.
    static let scalarForByte: [Unicode.Scalar] = {
        var table = [Unicode.Scalar](repeating: " ", count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            let printable = (33...126).contains(byte) || (161...172).contains(byte) || (174...255).contains(byte)
            if printable {
                table[byte] = Unicode.Scalar(UInt8(byte))
            } else {
                // 256 + n stays below U+0144: always a valid scalar.
                table[byte] = Unicode.Scalar(next) ?? " "
                next += 1
            }
        }
        return table
    }()

    /// The byte each alphabet character stands for, indexed by scalar value (-1: not in the alphabet).
    static let byteForScalar: [Int16] = {
        var table = [Int16](repeating: -1, count: 0x144)
        for (byte, scalar) in scalarForByte.enumerated() { table[Int(scalar.value)] = Int16(byte) }
        return table
    }()

    /// The bytes a byte-level token stands for, or nil when a character is outside the alphabet
    /// (`tokenizers` then keeps the token's own UTF-8, as for added tokens like `<|end|>`).
    static func decode(_ token: some Sequence<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        for scalar in String(decoding: Array(token), as: UTF8.self).unicodeScalars {
            guard scalar.value < 0x144 else { return nil }
            let byte = byteForScalar[Int(scalar.value)]
            guard byte >= 0 else { return nil }
            out.append(UInt8(byte))
        }
        return out
    }

    /// The byte-level characters of some text: one per UTF-8 byte.
    static func encode(_ scalars: some Sequence<Unicode.Scalar>) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        for scalar in scalars {
            for byte in scalar.utf8 { out.append(scalarForByte[Int(byte)]) }
        }
        return out
    }
}
