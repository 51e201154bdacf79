import HearthMacrosPlugin
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

/// `@Structured` on declarations it cannot describe: a compile-time error at the place, saying why.
final class MacroDiagnosticsTests: XCTestCase {
    let macros: [String: any Macro.Type] = ["Structured": StructuredMacro.self]

    func check(_ source: String, expanded: String, _ message: String, line: Int, column: Int, file: StaticString = #filePath, testLine: UInt = #line) {
        assertMacroExpansion(
            source, expandedSource: expanded, diagnostics: [DiagnosticSpec(message: message, line: line, column: column)],
            macros: macros, file: file, line: testLine)
    }

    func testAClass() {
        check(
            """
            @Structured
            class Box: Codable {
                var x: Int = 0
            }
            """,
            expanded: """
                class Box: Codable {
                    var x: Int = 0
                }
                """,
            "@Structured applies to a struct or an enum, not a class: a model generates values, and a value type's Codable is what its schema describes",
            line: 1, column: 1)
    }

    func testAComputedOnlyStruct() {
        check(
            """
            @Structured
            struct Area: Codable {
                var size: Int { 4 }
            }
            """,
            expanded: """
                struct Area: Codable {
                    var size: Int { 4 }
                }
                """,
            "@Structured needs stored properties: 'Area' has none, so a model would have nothing to generate (computed properties are not encoded)",
            line: 2, column: 8)
    }

    func testAPropertyWithoutItsType() {
        check(
            """
            @Structured
            struct Point: Codable {
                var x = 0
            }
            """,
            expanded: """
                struct Point: Codable {
                    var x = 0
                }
                """,
            "@Structured needs the type of 'x' written out ('var x: Type'): the schema is derived from the declaration",
            line: 3, column: 9)
    }

    func testADate() {
        check(
            """
            @Structured
            struct Event: Codable {
                var when: Date
            }
            """,
            expanded: """
                struct Event: Codable {
                    var when: Date
                }
                """,
            "@Structured cannot describe 'Date': a Date decodes from seconds since 2001, which a model does not write; use a String (with @SchemaGuide(pattern:) for a date format)",
            line: 3, column: 15)
    }

    func testAGuideThatDoesNotFitTheType() {
        check(
            """
            @Structured
            struct Age: Codable {
                @SchemaGuide(pattern: "[0-9]+") var years: Int
            }
            """,
            expanded: """
                struct Age: Codable {
                    @SchemaGuide(pattern: "[0-9]+") var years: Int
                }
                """,
            "@SchemaGuide(pattern:) applies to a String, and 'years' is not one",
            line: 3, column: 18)
    }

    func testARecursiveType() {
        check(
            """
            @Structured
            struct Node: Codable {
                var children: [Node]
            }
            """,
            expanded: """
                struct Node: Codable {
                    var children: [Node]
                }
                """,
            "@Structured cannot describe a type that contains itself ('Node'): its schema would never end",
            line: 3, column: 20)
    }

    func testADoubleRawValueEnum() {
        check(
            """
            @Structured
            enum Coin: Double, Codable {
                case penny = 0.01
            }
            """,
            expanded: """
                enum Coin: Double, Codable {
                    case penny = 0.01
                }
                """,
            "@Structured describes enums with String or Int raw values (or none); 'Double' raw values are not supported",
            line: 2, column: 12)
    }

    func testAGenericStruct() {
        check(
            """
            @Structured
            struct Box<T: Codable>: Codable {
                var item: T
            }
            """,
            expanded: """
                struct Box<T: Codable>: Codable {
                    var item: T
                }
                """,
            "@Structured cannot describe a generic type ('Box<T: Codable>'): its schema depends on the type arguments",
            line: 2, column: 11)
    }
}
