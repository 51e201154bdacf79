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
/// - `ipv4`: four decimal octets 0–255 without leading zeros (as Python's `ipaddress` reads them).
/// - `ipv6`: the full form, eight groups of 1–4 hexadecimal digits (a subset: no `::`, no
///   embedded IPv4).
/// - `hostname`: one to three labels of 1–63 letters, digits and inner hyphens, the last starting
///   with a letter (a subset of RFC 1123 within its 253 characters).
/// - `uri`: `http` or `https`, a host, an optional port, a path of unreserved characters and an
///   optional query (a subset of RFC 3986's URIs); `uri-reference`: such a URI or an absolute path.
/// - `json-pointer` (RFC 6901): `/`-separated tokens of unreserved characters with the `~0`/`~1`
///   escapes; `relative-json-pointer`: a non-negative integer, then `#` or a JSON pointer.
/// - `duration` (ISO 8601 as RFC 3339 appendix A writes it): `P` with years, months, days, then
///   `T` with hours, minutes, seconds (each present part 1–4 digits, at least one per side), or weeks.
enum StringFormats {
    static let names = [
        "date", "time", "date-time", "email", "uuid", "ipv4", "ipv6", "hostname", "uri", "uri-reference", "json-pointer",
        "relative-json-pointer", "duration",
    ]

    static let year = "(?:000[1-9]|00[1-9]\\d|0[1-9]\\d\\d|[1-9]\\d{3})"
    static let leapYear = "(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
    static let monthDay = "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))"
    static let date = "(?:\(year)-\(monthDay)|\(leapYear)-02-29)"
    static let time = "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)"
    static let atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
    static let label = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    static let email = "\(atom)(?:\\.\(atom))*@\(label)(?:\\.\(label))+"
    static let uuid = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    static let octet = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]\\d|\\d)"
    static let ipv4 = "\(octet)(?:\\.\(octet)){3}"
    static let ipv6 = "[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}"
    static let hostLabel = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    static let hostname = "(?:\(hostLabel)\\.){0,2}[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    static let unreserved = "[A-Za-z0-9._~-]"
    static let absolutePath = "(?:/\(unreserved)*)+"
    static let uri = "https?://\(label)(?:\\.\(label))*(?::\\d{1,5})?(?:/\(unreserved)*)*(?:\\?[A-Za-z0-9._~=&-]*)?"
    static let jsonPointer = "(?:/(?:[A-Za-z0-9._-]|~[01])*)*"
    static let durationDate = "(?:\\d{1,4}Y(?:\\d{1,4}M)?(?:\\d{1,4}D)?|\\d{1,4}M(?:\\d{1,4}D)?|\\d{1,4}D)"
    static let durationTime = "T(?:\\d{1,4}H(?:\\d{1,4}M)?(?:\\d{1,4}S)?|\\d{1,4}M(?:\\d{1,4}S)?|\\d{1,4}S)"
    static let duration = "P(?:\(durationDate)(?:\(durationTime))?|\(durationTime)|\\d{1,4}W)"

    static func pattern(_ name: String) -> String? {
        switch name {
        case "date": return date
        case "time": return time
        case "date-time": return "\(date)[Tt]\(time)"
        case "email": return email
        case "uuid": return uuid
        case "ipv4": return ipv4
        case "ipv6": return ipv6
        case "hostname": return hostname
        case "uri": return uri
        case "uri-reference": return "(?:\(uri)|\(absolutePath))"
        case "json-pointer": return jsonPointer
        case "relative-json-pointer": return "(?:0|[1-9]\\d*)(?:#|\(jsonPointer))"
        case "duration": return duration
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
