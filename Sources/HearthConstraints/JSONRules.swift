/// The shared named rules every JSON grammar uses (defined once per grammar, so every string,
/// number and value of a schema lowers to the same rules).
enum JSONRules {
    static let char = "json_char"
}
