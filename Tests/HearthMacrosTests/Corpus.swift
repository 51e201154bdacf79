import Foundation
import HearthMacros

// The corpus of Swift types the schema tests derive and the model tests generate: nested,
// optional, enums with and without associated values, arrays with counts, guides, CodingKeys.

@Structured(description: "A city and its landmarks")
struct City: Codable, Equatable {
    @SchemaGuide("The city's name") var name: String
    var country: String
    @SchemaGuide(range: 0...40_000_000) var population: Int
    @SchemaGuide(count: 1...3) var landmarks: [String]
    var nickname: String?
}

@Structured struct Address: Codable, Equatable {
    var street: String
    @SchemaGuide(pattern: "^[0-9]{5}$") var zip: String
}

@Structured struct Person: Codable, Equatable {
    @SchemaGuide(maxLength: 24) var name: String
    @SchemaGuide("Age in years", range: 0...120) var age: Int
    var address: Address
    var height: Double?
    var isMember: Bool
}

@Structured enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rectangle(width: Double, height: Double)
    case point(Int, Int)
    case empty
}

@Structured struct Drawing: Codable, Equatable {
    @SchemaGuide(maxLength: 16) var title: String
    @SchemaGuide(count: 1...2) var shapes: [Shape]
}

@Structured enum Priority: String, Codable, Equatable {
    case low, medium = "MED", high
}

@Structured enum Level: Int, Codable, Equatable {
    case one = 1, two, five = 5
}

@Structured struct Ticket: Codable, Equatable {
    @SchemaGuide(allowed: ["bug", "feature"]) var kind: String
    var priority: Priority
    var level: Level?
    var done: Bool
    var estimate: UInt8
    @SchemaGuide(maxItems: 2) var labels: [Priority]?
    var note: String = ""  // not in CodingKeys: not encoded, not in the schema
    static let version = 2  // static: not encoded
    var summary: String { "\(kind) \(priority)" }  // computed: not encoded

    enum CodingKeys: String, CodingKey {
        case kind = "ticket_kind", priority, level, done, estimate, labels
    }
}

/// Dictionaries, sets and the narrower integers.
@Structured struct Inventory: Codable, Equatable {
    var counts: [String: Int]
    var codes: Set<String>?
    var grades: [Int8]
    @SchemaGuide(minLength: 1, maxLength: 1) var initial: String
    var id: UUID?
}
