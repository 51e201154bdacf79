/// `format` values enforced for strings, as patterns over the string's characters (ASCII, so
/// no escapes are involved). Each is defined once per grammar as a rule `format_<name>`.
///
/// - `date`: `YYYY-MM-DD`, year 0001–9999, days per month, 29 February in leap years only.
/// - `time`: `HH:MM:SS`, optional `.fraction` (1–9 digits), then `Z` or `±HH:MM` (RFC 3339's
///   full-time; `z` accepted as the validators do). No leap second (`:60`).
/// - `date-time`: date, `T` (or `t`), time.
/// - `email`: a dot-atom local part, `@`, a domain of two or more labels (letters, digits,
///   inner hyphens) — a subset of what validators accept (they check little beyond the `@`).
/// - `uuid`: 8-4-4-4-12 hexadecimal digits, either case.
enum StringFormats {
    static let names = ["date", "time", "date-time", "email", "uuid"]

    static let year = "(?:000[1-9]|00[1-9]\\d|0[1-9]\\d\\d|[1-9]\\d{3})"
    static let leapYear = "(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
    static let monthDay = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))"
    static let date = "(?:\(year)-\(monthDay)|\(leapYear)-02-29)"
    static let time = "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)"
    static let atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
    static let label = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    static let email = "\(atom)(?:\\.\(atom))*@\(label)(?:\\.\(label))+"
    static let uuid = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"

    static func pattern(_ name: String) -> String? {
        switch name {
        case "date": return date
        case "time": return time
        case "date-time": return "\(date)[Tt]\(time)"
        case "email": return email
        case "uuid": return uuid
        default: return nil
        }
    }

    /// The rule for format `name` (inside a JSON string's quotes).
    static func expression(_ name: String, builder: inout GrammarBuilder, path: String) throws -> GrammarExpression {
        guard let p = pattern(name) else {
            throw ConstraintError(
                .unsupported, "format '\(name)' is not supported (supported: \(names.joined(separator: ", ")))", at: path)
        }
        let rule = "format_" + name
        if !builder.contains(rule) {
            try builder.define(rule, try RegularExpression.expression(p, encoding: .jsonString, search: false))
        }
        return .reference(rule)
    }
}
