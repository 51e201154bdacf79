import HearthJSON

extension JSON {
    /// The JSON type name as JSON Schema counts: `integer` for a number without a fractional
    /// part (`1`, `1.0`, `1e2`), else HearthJSON's ``JSON/typeName``.
    var schemaTypeName: String {
        if case .number(let number) = self { return DecimalNumber(number.text)?.isInteger == true ? "integer" : "number" }
        return typeName
    }

    /// Parses a schema document with HearthJSON's parser. Errors are `.syntax` at
    /// `line L, column C` (columns in bytes).
    static func schemaDocument(_ text: String) throws(ConstraintError) -> JSON {
        do { return try JSON.parse(text) } catch {
            let (line, column) = error.lineAndColumn(in: text)
            throw ConstraintError(.syntax, "invalid JSON: \(error.message)", at: "line \(line), column \(column)")
        }
    }
}
