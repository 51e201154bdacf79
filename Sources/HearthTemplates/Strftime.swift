import Foundation

/// C's `strftime` for the directives chat templates use (`strftime_now("%d %b %Y")`), in the
/// C locale, as Python's `datetime.strftime` prints them on glibc.
enum Strftime {
    private static let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
    private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    static func format(_ format: String, _ date: Date, _ timeZone: TimeZone, _ position: SourcePosition?) throws -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let year = c.year ?? 1970, month = c.month ?? 1, day = c.day ?? 1
        let hour = c.hour ?? 0, minute = c.minute ?? 0, second = c.second ?? 0, weekday = (c.weekday ?? 1) - 1
        let dayOfYear = calendar.ordinality(of: .day, in: .year, for: date) ?? 1
        func pad(_ v: Int, _ width: Int, _ fill: Character = "0") -> String {
            let s = String(v)
            return String(repeating: fill, count: max(0, width - s.count)) + s
        }
        var out = ""
        var it = format.makeIterator()
        while let ch = it.next() {
            guard ch == "%" else { out.append(ch); continue }
            guard var d = it.next() else { out.append("%"); break }
            var noPad = false
            if d == "-" {
                noPad = true
                guard let next = it.next() else { out += "%-"; break }
                d = next
            }
            func num(_ v: Int, _ width: Int, _ fill: Character = "0") -> String { noPad ? String(v) : pad(v, width, fill) }
            switch d {
            case "Y": out += String(year)
            case "y": out += num(year % 100, 2)
            case "m": out += num(month, 2)
            case "d": out += num(day, 2)
            case "e": out += num(day, 2, " ")
            case "H": out += num(hour, 2)
            case "I": out += num(hour % 12 == 0 ? 12 : hour % 12, 2)
            case "M": out += num(minute, 2)
            case "S": out += num(second, 2)
            case "p": out += hour < 12 ? "AM" : "PM"
            case "j": out += num(dayOfYear, 3)
            case "b", "h": out += String(months[month - 1].prefix(3))
            case "B": out += months[month - 1]
            case "a": out += String(weekdays[weekday].prefix(3))
            case "A": out += weekdays[weekday]
            case "w": out += String(weekday)
            case "u": out += String(weekday == 0 ? 7 : weekday)
            case "F": out += "\(year)-\(pad(month, 2))-\(pad(day, 2))"
            case "T": out += "\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))"
            case "D": out += "\(pad(month, 2))/\(pad(day, 2))/\(pad(year % 100, 2))"
            case "%": out += "%"
            case "n": out += "\n"
            case "t": out += "\t"
            default:
                throw TemplateError(.unsupported, "strftime directive '%\(d)' is not supported", at: position)
            }
        }
        return out
    }
}
