// OSWorld's pyautogui action space: the model writes Python. Iris reads the small subset agents
// emit (imports, pyautogui.<fn>(...) calls with literal arguments, time.sleep) as data and turns
// it into Actions. Nothing is ever executed; anything outside the subset (variables, loops, other
// modules) is an error naming its line.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "agent/actions/key_names.h"
#include "agent/actions/parse_common.h"
#include "base/strings.h"
#include "base/utf8.h"

namespace iris::agent::detail {
namespace {

// ---- Tokens ---------------------------------------------------------------------------------

enum class TokenKind { Name, Number, String, Op, Newline, End };

struct Token {
    TokenKind kind = TokenKind::End;
    std::string text;  // names, operators; a string literal's decoded value
    double number = 0;
    bool isInteger = false;
    int line = 1;
};

bool isNameStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isNameChar(char c) {
    return isNameStart(c) || isDigit(c);
}

// Python's tokenizer, reduced: names, numbers, string literals (all quote styles, escapes, r/b/u
// prefixes), operators, logical newlines (newlines inside brackets and after a backslash join
// lines), comments.
class Lexer {
public:
    Lexer(std::string_view text, int firstLine) : m_text(text), m_line(firstLine) {}

    Result<std::vector<Token>> tokenize() {
        std::vector<Token> tokens;
        int depth = 0;
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c == '\n') {
                if (depth == 0 && !tokens.empty() && tokens.back().kind != TokenKind::Newline)
                    tokens.push_back(make(TokenKind::Newline, "\n"));
                ++m_line;
                ++m_pos;
            } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
                ++m_pos;
            } else if (c == '#') {
                while (m_pos < m_text.size() && m_text[m_pos] != '\n')
                    ++m_pos;
            } else if (c == '\\' && m_pos + 1 < m_text.size() &&
                       (m_text[m_pos + 1] == '\n' || m_text[m_pos + 1] == '\r')) {
                m_pos += m_text[m_pos + 1] == '\r' ? 2 : 1;
                if (m_pos < m_text.size() && m_text[m_pos] == '\n') ++m_pos;
                ++m_line;
            } else if (isDigit(c) ||
                       (c == '.' && m_pos + 1 < m_text.size() && isDigit(m_text[m_pos + 1]))) {
                Result<Token> number = lexNumber();
                if (!number) return number.status();
                tokens.push_back(std::move(*number));
            } else if (isNameStart(c)) {
                std::size_t end = m_pos;
                while (end < m_text.size() && isNameChar(m_text[end]))
                    ++end;
                const std::string_view name = m_text.substr(m_pos, end - m_pos);
                if (end < m_text.size() && (m_text[end] == '\'' || m_text[end] == '"') &&
                    isStringPrefix(name)) {
                    Result<Token> string = lexString(name);
                    if (!string) return string.status();
                    tokens.push_back(std::move(*string));
                } else {
                    tokens.push_back(make(TokenKind::Name, std::string(name)));
                    m_pos = end;
                }
            } else if (c == '\'' || c == '"') {
                Result<Token> string = lexString("");
                if (!string) return string.status();
                tokens.push_back(std::move(*string));
            } else if (std::string_view("()[]{},=.;+-*/:%<>!@&|^~").find(c) !=
                       std::string_view::npos) {
                if (c == '(' || c == '[' || c == '{') ++depth;
                if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
                tokens.push_back(make(TokenKind::Op, std::string(1, c)));
                ++m_pos;
            } else {
                return error("unexpected character '" + snippet(m_text.substr(m_pos, 1)) + "'");
            }
        }
        if (!tokens.empty() && tokens.back().kind != TokenKind::Newline)
            tokens.push_back(make(TokenKind::Newline, "\n"));
        tokens.push_back(make(TokenKind::End, ""));
        return tokens;
    }

private:
    static bool isStringPrefix(std::string_view name) {
        const std::string lower = asciiLower(name);
        return lower == "r" || lower == "u" || lower == "b" || lower == "rb" || lower == "br" ||
               lower == "f" || lower == "fr" || lower == "rf";
    }

    Token make(TokenKind kind, std::string text) const {
        Token token;
        token.kind = kind;
        token.text = std::move(text);
        token.line = m_line;
        return token;
    }

    Status error(const std::string& message) const {
        return Status::invalidArgument("line " + std::to_string(m_line) + ": " + message);
    }

    Result<Token> lexNumber() {
        std::string digits;
        bool isInteger = true;
        std::size_t end = m_pos;
        if (m_text.substr(end, 2) == "0x" || m_text.substr(end, 2) == "0X") {
            end += 2;
            double value = 0;
            std::size_t count = 0;
            while (end < m_text.size() && (hexDigitValue(m_text[end]) >= 0 || m_text[end] == '_')) {
                if (m_text[end] != '_') value = value * 16 + hexDigitValue(m_text[end]);
                ++end;
                ++count;
            }
            if (count == 0) return error("malformed number");
            Token token = make(TokenKind::Number, std::string(m_text.substr(m_pos, end - m_pos)));
            token.number = value;
            token.isInteger = true;
            m_pos = end;
            return token;
        }
        while (end < m_text.size()) {
            const char c = m_text[end];
            if (isDigit(c)) {
                digits += c;
            } else if (c == '_') {
            } else if (c == '.') {
                isInteger = false;
                digits += c;
            } else if ((c == 'e' || c == 'E') && end + 1 < m_text.size()) {
                isInteger = false;
                digits += c;
                if (m_text[end + 1] == '+' || m_text[end + 1] == '-') digits += m_text[++end];
            } else {
                break;
            }
            ++end;
        }
        if (end < m_text.size() && isNameChar(m_text[end]))
            return error("malformed number '" + snippet(m_text.substr(m_pos, end - m_pos + 1)) +
                         "'");
        char* parsedEnd = nullptr;
        const double value = std::strtod(digits.c_str(), &parsedEnd);
        if (parsedEnd != digits.c_str() + digits.size())
            return error("malformed number '" + snippet(digits) + "'");
        Token token = make(TokenKind::Number, digits);
        token.number = value;
        token.isInteger = isInteger;
        m_pos = end;
        return token;
    }

    Result<Token> lexString(std::string_view prefix) {
        bool raw = false;
        for (const char c : prefix) {
            if (c == 'r' || c == 'R') raw = true;
            if (c == 'f' || c == 'F')
                return error("f-strings are not supported: write the text as a plain string");
        }
        const int startLine = m_line;
        m_pos += prefix.size();
        const char quote = m_text[m_pos];
        const bool triple = m_text.substr(m_pos, 3) == std::string(3, quote);
        m_pos += triple ? 3 : 1;
        std::string value;
        while (true) {
            if (m_pos >= m_text.size())
                return Status::invalidArgument("line " + std::to_string(startLine) +
                                               ": unterminated string");
            const char c = m_text[m_pos];
            if (c == quote) {
                if (!triple) {
                    ++m_pos;
                    break;
                }
                if (m_text.substr(m_pos, 3) == std::string(3, quote)) {
                    m_pos += 3;
                    break;
                }
            }
            if (c == '\n') {
                if (!triple)
                    return Status::invalidArgument("line " + std::to_string(startLine) +
                                                   ": unterminated string");
                ++m_line;
            }
            if (c == '\\' && m_pos + 1 < m_text.size()) {
                if (raw) {
                    // A raw string keeps the backslash, but it still protects the quote.
                    value += c;
                    value += m_text[m_pos + 1];
                    if (m_text[m_pos + 1] == '\n') ++m_line;
                    m_pos += 2;
                    continue;
                }
                IRIS_RETURN_IF_ERROR(lexEscape(value));
                continue;
            }
            value += c;
            ++m_pos;
        }
        Token token = make(TokenKind::String, std::move(value));
        token.line = startLine;
        return token;
    }

    // At a backslash inside a non-raw string: appends the escaped character(s).
    Status lexEscape(std::string& value) {
        const char e = m_text[m_pos + 1];
        m_pos += 2;
        const auto hex = [&](int count) -> Result<unsigned long> {
            unsigned long codePoint = 0;
            for (int i = 0; i < count; ++i) {
                const int digit = m_pos < m_text.size() ? hexDigitValue(m_text[m_pos]) : -1;
                if (digit < 0) return error("malformed \\x, \\u or \\U escape in a string");
                codePoint = codePoint * 16 + static_cast<unsigned long>(digit);
                ++m_pos;
            }
            return codePoint;
        };
        switch (e) {
            case '\n':
                ++m_line;
                return Status::ok();  // line continuation inside the string
            case 'n':
                value += '\n';
                return Status::ok();
            case 't':
                value += '\t';
                return Status::ok();
            case 'r':
                value += '\r';
                return Status::ok();
            case 'a':
                value += '\a';
                return Status::ok();
            case 'b':
                value += '\b';
                return Status::ok();
            case 'f':
                value += '\f';
                return Status::ok();
            case 'v':
                value += '\v';
                return Status::ok();
            case '\\':
                value += '\\';
                return Status::ok();
            case '\'':
                value += '\'';
                return Status::ok();
            case '"':
                value += '"';
                return Status::ok();
            case 'x': {
                Result<unsigned long> code = hex(2);
                if (!code) return code.status();
                utf8::append(value, static_cast<char32_t>(std::min(*code, 0x110000UL)));
                return Status::ok();
            }
            case 'u':
            case 'U': {
                Result<unsigned long> code = hex(e == 'u' ? 4 : 8);
                if (!code) return code.status();
                utf8::append(value, static_cast<char32_t>(std::min(*code, 0x110000UL)));
                return Status::ok();
            }
            case 'N':
                return error("\\N{...} escapes are not supported: write the character");
            default:
                if (e >= '0' && e <= '7') {
                    unsigned long code = static_cast<unsigned long>(e - '0');
                    for (int i = 0; i < 2 && m_pos < m_text.size() && m_text[m_pos] >= '0' &&
                                    m_text[m_pos] <= '7';
                         ++i)
                        code = code * 8 + static_cast<unsigned long>(m_text[m_pos++] - '0');
                    utf8::append(value, static_cast<char32_t>(code));
                    return Status::ok();
                }
                // Python keeps unknown escapes as they are.
                value += '\\';
                value += e;
                return Status::ok();
        }
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
    int m_line;
};

// ---- Values and calls -----------------------------------------------------------------------

struct Value {
    enum class Kind { None, Bool, Number, String, List } kind = Kind::None;
    double number = 0;  // Bool: 0 or 1
    bool isInteger = false;
    std::string text;
    std::vector<Value> items;  // lists and tuples
};

std::string kindName(const Value& value) {
    switch (value.kind) {
        case Value::Kind::None:
            return "None";
        case Value::Kind::Bool:
            return "a boolean";
        case Value::Kind::Number:
            return "a number";
        case Value::Kind::String:
            return "a string";
        case Value::Kind::List:
            return "a list";
    }
    return "a value";
}

struct Call {
    std::string module;  // "pyautogui" or "time"
    std::string function;
    std::vector<Value> args;
    std::vector<std::pair<std::string, Value>> keywords;
    int line = 1;
};

// Python keywords that start statements Iris does not run.
const std::set<std::string_view>& statementKeywords() {
    static const std::set<std::string_view> kKeywords = {
        "for",   "while",  "if",      "elif",   "else",   "def",  "class",  "with",
        "try",   "except", "finally", "return", "lambda", "del",  "global", "nonlocal",
        "raise", "assert", "async",   "await",  "yield",  "pass", "break",  "continue",
        "exec",  "print",  "not",     "and",    "or",     "is",   "in",
    };
    return kKeywords;
}

// Recursive descent over the tokens of one code block: statements -> Calls, with errors that
// name the line. A statement that fails is skipped to its end; the rest are still read.
class StatementParser {
public:
    explicit StatementParser(const std::vector<Token>& tokens) : m_tokens(tokens) {}

    // Calls (and WAIT/DONE/FAIL as calls to module "") in order, errors appended to `errors`.
    std::vector<Call> parse(std::vector<std::string>& errors) {
        std::vector<Call> calls;
        while (peek().kind != TokenKind::End) {
            if (peek().kind == TokenKind::Newline || isOp(";")) {
                ++m_pos;
                continue;
            }
            Result<std::optional<Call>> call = statement();
            if (call) {
                if (peek().kind == TokenKind::Newline || isOp(";") ||
                    peek().kind == TokenKind::End) {
                    if (*call) calls.push_back(std::move(**call));
                    continue;
                }
                errors.push_back("line " + std::to_string(peek().line) + ": unexpected " +
                                 shown(peek()) + " after the statement");
            } else {
                errors.push_back(call.status().message());
            }
            while (peek().kind != TokenKind::End && peek().kind != TokenKind::Newline)
                ++m_pos;
        }
        return calls;
    }

private:
    static constexpr int kMaxDepth = 32;

    const Token& peek(std::size_t ahead = 0) const {
        const std::size_t i = std::min(m_pos + ahead, m_tokens.size() - 1);
        return m_tokens[i];
    }
    bool isOp(std::string_view op, std::size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::Op && peek(ahead).text == op;
    }
    Status errorAt(const Token& token, const std::string& message) const {
        return Status::invalidArgument("line " + std::to_string(token.line) + ": " + message);
    }
    static std::string shown(const Token& token) {
        if (token.kind == TokenKind::Newline) return "end of line";
        if (token.kind == TokenKind::End) return "end of code";
        if (token.kind == TokenKind::String) return "a string";
        return "'" + snippet(token.text, 20) + "'";
    }

    Result<std::optional<Call>> statement() {
        const Token& first = peek();
        if (first.kind != TokenKind::Name)
            return errorAt(first, "unexpected " + shown(first) +
                                      ": expected a pyautogui call, time.sleep or an import");
        if (first.text == "import") return importStatement();
        if (first.text == "from")
            return errorAt(first, "'from ... import' is not supported: use 'import pyautogui'");
        if (statementKeywords().count(first.text) != 0)
            return errorAt(first, "'" + first.text +
                                      "' is not supported: only pyautogui calls, time.sleep "
                                      "and imports are run");
        const bool endsHere =
            peek(1).kind == TokenKind::Newline || peek(1).kind == TokenKind::End || isOp(";", 1);
        if ((first.text == "WAIT" || first.text == "DONE" || first.text == "FAIL") && endsHere) {
            ++m_pos;
            Call call;
            call.function = first.text;
            call.line = first.line;
            return std::optional<Call>(std::move(call));
        }
        if (!isOp(".", 1)) {
            if (isOp("=", 1))
                return errorAt(first,
                               "assignments are not supported: write the values into "
                               "the calls");
            if (isOp("(", 1)) return errorAt(first, first.text + ": unknown function");
            return errorAt(
                first, "unexpected '" + snippet(first.text, 20) + "': expected a pyautogui call");
        }
        const std::string module = resolveModule(first.text);
        if (peek(2).kind != TokenKind::Name)
            return errorAt(first, "expected a function name after '" + first.text + ".'");
        const Token& function = peek(2);
        const std::string qualified = first.text + "." + function.text;
        m_pos += 3;
        if (module != "pyautogui" && module != "time")
            return errorAt(first, qualified + ": only pyautogui and time functions are allowed");
        if (isOp("=")) {
            // pyautogui.FAILSAFE = False and pyautogui.PAUSE = 0.5 are harmless settings.
            if (module == "pyautogui" &&
                (function.text == "FAILSAFE" || function.text == "PAUSE")) {
                ++m_pos;
                Result<Value> ignored = value(0);
                if (!ignored) return ignored.status();
                return std::optional<Call>();
            }
            return errorAt(first, "assignments are not supported");
        }
        if (!isOp("("))
            return errorAt(peek(), qualified + ": expected '(' after the function name");
        ++m_pos;
        Call call;
        call.module = module;
        call.function = function.text;
        call.line = first.line;
        while (!isOp(")")) {
            if (peek().kind == TokenKind::Name && isOp("=", 1)) {
                std::string name = peek().text;
                m_pos += 2;
                Result<Value> v = value(0);
                if (!v) return v.status();
                for (const auto& keyword : call.keywords)
                    if (keyword.first == name)
                        return errorAt(first, qualified + ": keyword '" + name + "' repeated");
                call.keywords.emplace_back(std::move(name), std::move(*v));
            } else {
                if (isOp("*"))
                    return errorAt(peek(), qualified + ": '*' unpacking is not supported");
                if (!call.keywords.empty())
                    return errorAt(peek(),
                                   qualified + ": positional argument after a keyword argument");
                Result<Value> v = value(0);
                if (!v) return v.status();
                call.args.push_back(std::move(*v));
            }
            if (isOp(",")) {
                ++m_pos;
            } else if (!isOp(")")) {
                return errorAt(peek(),
                               qualified + ": expected ',' or ')' but found " + shown(peek()));
            }
        }
        ++m_pos;
        return std::optional<Call>(std::move(call));
    }

    Result<std::optional<Call>> importStatement() {
        const Token& keyword = peek();
        ++m_pos;
        while (true) {
            if (peek().kind != TokenKind::Name)
                return errorAt(keyword, "expected a module name after 'import'");
            const std::string module = peek().text;
            if (module != "pyautogui" && module != "time")
                return errorAt(keyword, "import " + snippet(module, 30) +
                                            ": only pyautogui and time may be imported");
            ++m_pos;
            if (peek().kind == TokenKind::Name && peek().text == "as") {
                if (peek(1).kind != TokenKind::Name)
                    return errorAt(keyword, "expected a name after 'as'");
                m_aliases[peek(1).text] = module;
                m_pos += 2;
            }
            if (!isOp(",")) break;
            ++m_pos;
        }
        return std::optional<Call>();
    }

    std::string resolveModule(const std::string& name) const {
        const auto it = m_aliases.find(name);
        return it == m_aliases.end() ? name : it->second;
    }

    // Literals, lists and tuples, and arithmetic on numbers (models write click(100 + 20, 300)).
    Result<Value> value(int depth) { return sum(depth); }

    Result<Value> sum(int depth) {
        Result<Value> left = product(depth);
        if (!left) return left;
        while (isOp("+") || isOp("-")) {
            const Token& op = peek();
            ++m_pos;
            Result<Value> right = product(depth);
            if (!right) return right;
            if (left->kind != Value::Kind::Number || right->kind != Value::Kind::Number)
                return errorAt(op, "'" + op.text + "' needs numbers on both sides");
            left->number =
                op.text == "+" ? left->number + right->number : left->number - right->number;
            left->isInteger = left->isInteger && right->isInteger;
        }
        return left;
    }

    Result<Value> product(int depth) {
        Result<Value> left = unary(depth);
        if (!left) return left;
        while (isOp("*") || isOp("/")) {
            const Token& op = peek();
            ++m_pos;
            bool floorDivision = false;
            if (op.text == "/" && isOp("/")) {
                floorDivision = true;
                ++m_pos;
            }
            Result<Value> right = unary(depth);
            if (!right) return right;
            if (left->kind != Value::Kind::Number || right->kind != Value::Kind::Number)
                return errorAt(op, "'" + op.text + "' needs numbers on both sides");
            if (op.text == "*") {
                left->number *= right->number;
                left->isInteger = left->isInteger && right->isInteger;
            } else {
                if (right->number == 0) return errorAt(op, "division by zero");
                left->number /= right->number;
                if (floorDivision) left->number = std::floor(left->number);
                left->isInteger = floorDivision && left->isInteger && right->isInteger;
            }
        }
        return left;
    }

    Result<Value> unary(int depth) {
        if (isOp("-") || isOp("+")) {
            const bool negate = isOp("-");
            const Token& op = peek();
            ++m_pos;
            if (depth >= kMaxDepth) return errorAt(op, "expression nested too deeply");
            Result<Value> operand = unary(depth + 1);
            if (!operand) return operand;
            if (operand->kind != Value::Kind::Number)
                return errorAt(op, "'" + op.text + "' needs a number");
            if (negate) operand->number = -operand->number;
            return operand;
        }
        return atom(depth);
    }

    Result<Value> atom(int depth) {
        const Token& token = peek();
        if (depth >= kMaxDepth) return errorAt(token, "expression nested too deeply");
        Value v;
        switch (token.kind) {
            case TokenKind::Number:
                ++m_pos;
                v.kind = Value::Kind::Number;
                v.number = token.number;
                v.isInteger = token.isInteger;
                return v;
            case TokenKind::String:
                v.kind = Value::Kind::String;
                // Adjacent literals concatenate, as in Python.
                while (peek().kind == TokenKind::String)
                    v.text += peek().text, ++m_pos;
                return v;
            case TokenKind::Name:
                if (token.text == "True" || token.text == "False") {
                    ++m_pos;
                    v.kind = Value::Kind::Bool;
                    v.number = token.text == "True" ? 1 : 0;
                    v.isInteger = true;
                    return v;
                }
                if (token.text == "None") {
                    ++m_pos;
                    return v;
                }
                return errorAt(token, "'" + snippet(token.text, 30) +
                                          "': variables and expressions are not supported, "
                                          "only literal values");
            case TokenKind::Op:
                if (token.text == "(" || token.text == "[") return sequence(depth);
                break;
            default:
                break;
        }
        return errorAt(token, "expected a value but found " + shown(token));
    }

    // (a), (a, b), [a, b]: a parenthesised single value is that value.
    Result<Value> sequence(int depth) {
        const Token& open = peek();
        const std::string close = open.text == "(" ? ")" : "]";
        ++m_pos;
        Value list;
        list.kind = Value::Kind::List;
        bool sawComma = false;
        while (!isOp(close)) {
            Result<Value> item = value(depth + 1);
            if (!item) return item;
            list.items.push_back(std::move(*item));
            if (isOp(",")) {
                sawComma = true;
                ++m_pos;
            } else if (!isOp(close)) {
                return errorAt(peek(),
                               "expected ',' or '" + close + "' but found " + shown(peek()));
            }
        }
        ++m_pos;
        if (open.text == "(" && !sawComma && list.items.size() == 1)
            return std::move(list.items.front());
        return list;
    }

    const std::vector<Token>& m_tokens;
    std::size_t m_pos = 0;
    std::map<std::string, std::string> m_aliases;
};

// ---- Calls -> Actions -----------------------------------------------------------------------

// Binds a call's positional and keyword arguments to a function's parameter names.
class Arguments {
public:
    Arguments(const Call& call, std::initializer_list<const char*> names) {
        m_names.assign(names.begin(), names.end());
        for (std::size_t i = 0; i < call.args.size(); ++i) {
            if (i >= m_names.size()) {
                fail("takes at most " + std::to_string(m_names.size()) + " positional arguments");
                break;
            }
            m_bound[m_names[i]] = &call.args[i];
        }
        for (const auto& [name, v] : call.keywords) {
            if (std::find(m_names.begin(), m_names.end(), name) == m_names.end()) {
                fail("unexpected keyword argument '" + snippet(name, 30) + "'");
                continue;
            }
            if (m_bound.count(name) != 0) fail("argument '" + name + "' given twice");
            m_bound[name] = &v;
        }
    }

    // The argument, or null when it was not given (or given as None).
    const Value* get(const std::string& name) const {
        const auto it = m_bound.find(name);
        if (it == m_bound.end() || it->second->kind == Value::Kind::None) return nullptr;
        return it->second;
    }

    std::optional<double> number(const std::string& name) {
        const Value* v = get(name);
        if (v == nullptr) return fail("missing argument '" + name + "'");
        if (v->kind != Value::Kind::Number && v->kind != Value::Kind::Bool)
            return fail("'" + name + "' must be a number, not " + kindName(*v));
        if (!std::isfinite(v->number)) return fail("'" + name + "' must be finite");
        return v->number;
    }

    std::optional<int> integer(const std::string& name, int fallback, int minimum, int maximum) {
        if (get(name) == nullptr) return fallback;
        const std::optional<double> n = number(name);
        if (!n) return std::nullopt;
        if (*n != std::floor(*n) || *n < minimum || *n > maximum)
            return fail("'" + name + "' must be a whole number from " + std::to_string(minimum) +
                        " to " + std::to_string(maximum));
        return static_cast<int>(*n);
    }

    std::optional<std::string> string(const std::string& name) {
        const Value* v = get(name);
        if (v == nullptr) return fail("missing argument '" + name + "'");
        if (v->kind != Value::Kind::String)
            return fail("'" + name + "' must be a string, not " + kindName(*v));
        return v->text;
    }

    // x and y as two numbers, or x as an (x, y) pair. nullopt inside: neither was given.
    std::optional<std::optional<Point>> rawPoint(const std::string& xName,
                                                 const std::string& yName) {
        const Value* x = get(xName);
        const Value* y = get(yName);
        if (x == nullptr && y == nullptr) return std::optional<Point>();
        if (x != nullptr && x->kind == Value::Kind::List && y == nullptr) {
            if (x->items.size() != 2 || x->items[0].kind != Value::Kind::Number ||
                x->items[1].kind != Value::Kind::Number)
                return fail("'" + xName + "' must be a number or an (x, y) pair");
            return std::optional<Point>(Point{x->items[0].number, x->items[1].number});
        }
        if (x == nullptr) return fail("'" + yName + "' given without '" + xName + "'");
        if (y == nullptr) return fail("'" + xName + "' given without '" + yName + "'");
        const std::optional<double> xv = number(xName);
        const std::optional<double> yv = number(yName);
        if (!xv || !yv) return std::nullopt;
        return std::optional<Point>(Point{*xv, *yv});
    }

    std::optional<MouseButton> button() {
        if (get("button") == nullptr) return MouseButton::Left;
        const std::optional<std::string> name = string("button");
        if (!name) return std::nullopt;
        if (*name == "left" || *name == "primary") return MouseButton::Left;
        if (*name == "right" || *name == "secondary") return MouseButton::Right;
        if (*name == "middle") return MouseButton::Middle;
        return fail("button must be 'left', 'right' or 'middle', not '" + snippet(*name, 30) + "'");
    }

    // A key name, or a list of them.
    std::optional<std::vector<std::string>> keys(const std::string& name) {
        const Value* v = get(name);
        if (v == nullptr) return fail("missing argument '" + name + "'");
        std::vector<const Value*> items;
        if (v->kind == Value::Kind::List) {
            for (const Value& item : v->items)
                items.push_back(&item);
        } else {
            items.push_back(v);
        }
        return keyList(items);
    }

    std::optional<std::vector<std::string>> keyList(const std::vector<const Value*>& items) {
        if (items.empty()) return fail("needs at least one key");
        std::vector<std::string> keys;
        for (const Value* item : items) {
            if (item->kind != Value::Kind::String)
                return fail("key names must be strings, not " + kindName(*item));
            Result<std::string> key = normalizeKeyName(item->text);
            if (!key) return fail(key.status().message());
            keys.push_back(std::move(*key));
        }
        return keys;
    }

    std::nullopt_t fail(const std::string& problem) {
        if (m_error.empty()) m_error = problem;
        return std::nullopt;
    }
    bool ok() const { return m_error.empty(); }
    const std::string& error() const { return m_error; }

private:
    std::vector<std::string> m_names;
    std::map<std::string, const Value*> m_bound;
    std::string m_error;
};

constexpr int kMaxKeyPresses = 100;
constexpr int kMaxScrollNotches = 1000;
constexpr double kMaxWaitSeconds = 600;

// Turns calls into actions, tracking the pointer so that relative moves after an absolute one
// work without knowing where the pointer started.
class Translator {
public:
    Translator(const ParseOptions& options, ParsedStep& step)
        : m_options(options), m_step(step), m_pointer(options.pointer) {}

    void translate(const Call& call) {
        std::vector<Action> actions;
        const std::string name =
            call.module.empty() ? call.function : call.module + "." + call.function;
        const Status status = translateInto(call, actions);
        if (!status.isOk()) {
            m_step.errors.push_back("line " + std::to_string(call.line) + ": " + snippet(name, 40) +
                                    ": " + status.message());
            return;
        }
        for (Action& action : actions)
            m_step.actions.push_back(std::move(action));
    }

private:
    Result<std::optional<Point>> absolute(Arguments& args, const char* x = "x",
                                          const char* y = "y") {
        const std::optional<std::optional<Point>> raw = args.rawPoint(x, y);
        if (!raw) return Status::invalidArgument(args.error());
        if (!*raw) return std::optional<Point>();
        Result<Point> p = mapPoint((*raw)->x, (*raw)->y, m_options);
        if (!p) return p.status();
        m_pointer = *p;
        return std::optional<Point>(*p);
    }

    // The pointer moved by an offset in the model's frame; needs to know where it is.
    Result<Point> relative(Arguments& args, const char* dxName, const char* dyName) {
        const std::optional<std::optional<Point>> raw = args.rawPoint(dxName, dyName);
        if (!raw) return Status::invalidArgument(args.error());
        const Point offset = raw->value_or(Point{0, 0});
        if (!m_pointer)
            return Status::invalidArgument(
                "a relative move needs the pointer position, which is not known here: use "
                "moveTo/dragTo with absolute coordinates");
        double sx = 1, sy = 1;
        const double width = m_options.screenWidth, height = m_options.screenHeight;
        if (width > 0 && height > 0) {
            if (m_options.frame.kind == CoordinateFrame::Kind::Relative1000) {
                sx = width / 1000;
                sy = height / 1000;
            } else if (m_options.frame.kind == CoordinateFrame::Kind::ResizedImage &&
                       m_options.frame.width > 0 && m_options.frame.height > 0) {
                sx = width / m_options.frame.width;
                sy = height / m_options.frame.height;
            }
        }
        ParseOptions pixels = m_options;
        pixels.frame = CoordinateFrame{};
        Result<Point> p =
            mapPoint(m_pointer->x + offset.x * sx, m_pointer->y + offset.y * sy, pixels);
        if (!p) return p.status();
        m_pointer = *p;
        return *p;
    }

    static Status argError(const Arguments& args) { return Status::invalidArgument(args.error()); }

    // WAIT, DONE and FAIL, time.sleep, then pyautogui's functions by name (the statement parser
    // admits no module but pyautogui and time).
    Status translateInto(const Call& call, std::vector<Action>& out) {
        const std::string& f = call.function;
        if (call.module.empty()) return episodeEnd(f, out);
        if (call.module == "time" || f == "sleep") return timeSleep(call, out);
        using Handler = Status (Translator::*)(const Call&, std::vector<Action>&);
        static const std::map<std::string_view, Handler> kHandlers = {
            {"click", &Translator::click},
            {"doubleClick", &Translator::click},
            {"tripleClick", &Translator::click},
            {"rightClick", &Translator::click},
            {"middleClick", &Translator::click},
            {"leftClick", &Translator::click},
            {"moveTo", &Translator::moveTo},
            {"moveRel", &Translator::moveRel},
            {"move", &Translator::moveRel},
            {"dragTo", &Translator::drag},
            {"drag", &Translator::drag},
            {"dragRel", &Translator::drag},
            {"mouseDown", &Translator::mouseButton},
            {"mouseUp", &Translator::mouseButton},
            {"scroll", &Translator::scroll},
            {"vscroll", &Translator::scroll},
            {"hscroll", &Translator::scroll},
            {"write", &Translator::writeText},
            {"typewrite", &Translator::writeText},
            {"press", &Translator::press},
            {"hotkey", &Translator::hotkey},
            {"keyDown", &Translator::keyUpOrDown},
            {"keyUp", &Translator::keyUpOrDown},
        };
        if (const auto it = kHandlers.find(f); it != kHandlers.end())
            return (this->*it->second)(call, out);
        static const std::set<std::string_view> kUnavailable = {
            "screenshot",        "locateOnScreen", "locateCenterOnScreen",
            "locateAllOnScreen", "position",       "size",
            "onScreen",          "pixel",          "alert",
            "confirm",           "prompt",         "password"};
        if (kUnavailable.count(f) != 0)
            return Status::invalidArgument(
                "not available: the next observation brings a fresh screenshot, and actions "
                "use coordinates you read from it");
        return Status::invalidArgument("unknown function");
    }

    static Status episodeEnd(const std::string& f, std::vector<Action>& out) {
        if (f == "WAIT") out.push_back(Wait{});
        if (f == "DONE") out.push_back(Done{});
        if (f == "FAIL") out.push_back(Fail{});
        return Status::ok();
    }

    Status timeSleep(const Call& call, std::vector<Action>& out) {
        if (call.function != "sleep") return Status::invalidArgument("unknown function");
        Arguments args(call, {"secs"});
        const std::optional<double> seconds = args.number("secs");
        if (!seconds) return argError(args);
        if (*seconds < 0 || *seconds > kMaxWaitSeconds)
            return Status::invalidArgument("seconds must be from 0 to 600");
        out.push_back(Wait{*seconds});
        return Status::ok();
    }

    // click, doubleClick, tripleClick, rightClick, middleClick, leftClick.
    Status click(const Call& call, std::vector<Action>& out) {
        const std::string& f = call.function;
        const bool hasButton = f == "click" || f == "doubleClick" || f == "tripleClick";
        Arguments args = f == "click"
                             ? Arguments(call, {"x", "y", "clicks", "interval", "button",
                                                "duration", "tween", "logScreenshot", "_pause"})
                         : hasButton ? Arguments(call, {"x", "y", "interval", "button", "duration",
                                                        "tween", "logScreenshot", "_pause"})
                                     : Arguments(call, {"x", "y", "interval", "duration", "tween",
                                                        "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        Click click;
        Result<std::optional<Point>> at = absolute(args);
        if (!at) return at.status();
        click.at = *at;
        if (hasButton) {
            const std::optional<MouseButton> button = args.button();
            if (!button) return argError(args);
            click.button = *button;
        }
        if (f == "rightClick") click.button = MouseButton::Right;
        if (f == "middleClick") click.button = MouseButton::Middle;
        click.count = f == "doubleClick" ? 2 : f == "tripleClick" ? 3 : 1;
        if (f == "click") {
            const std::optional<int> clicks = args.integer("clicks", 1, 0, 3);
            if (!clicks) return argError(args);
            if (*clicks == 0) {  // pyautogui moves but does not click
                if (click.at) out.push_back(MoveTo{*click.at});
                return Status::ok();
            }
            click.count = *clicks;
        }
        out.push_back(click);
        return Status::ok();
    }

    Status moveTo(const Call& call, std::vector<Action>& out) {
        Arguments args(call, {"x", "y", "duration", "tween", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        Result<std::optional<Point>> to = absolute(args);
        if (!to) return to.status();
        if (!*to) return Status::invalidArgument("missing arguments 'x' and 'y'");
        out.push_back(MoveTo{**to});
        return Status::ok();
    }

    // moveRel, move.
    Status moveRel(const Call& call, std::vector<Action>& out) {
        Arguments args(call,
                       {"xOffset", "yOffset", "duration", "tween", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        Result<Point> to = relative(args, "xOffset", "yOffset");
        if (!to) return to.status();
        out.push_back(MoveTo{*to});
        return Status::ok();
    }

    // dragTo (absolute), drag and dragRel (relative).
    Status drag(const Call& call, std::vector<Action>& out) {
        const bool isRelative = call.function != "dragTo";
        Arguments args(
            call, {isRelative ? "xOffset" : "x", isRelative ? "yOffset" : "y", "duration", "tween",
                   "button", "logScreenshot", "_pause", "mouseDownUp"});
        if (!args.ok()) return argError(args);
        const std::optional<MouseButton> button = args.button();
        if (!button) return argError(args);
        const std::optional<Point> from = m_pointer;
        Drag drag;
        drag.button = *button;
        if (isRelative) {
            Result<Point> to = relative(args, "xOffset", "yOffset");
            if (!to) return to.status();
            drag.from = from;
            drag.to = *to;
        } else {
            Result<std::optional<Point>> to = absolute(args);
            if (!to) return to.status();
            if (!*to) return Status::invalidArgument("missing arguments 'x' and 'y'");
            drag.to = **to;
        }
        out.push_back(drag);
        return Status::ok();
    }

    // mouseDown, mouseUp.
    Status mouseButton(const Call& call, std::vector<Action>& out) {
        Arguments args(call, {"x", "y", "button", "duration", "tween", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        Result<std::optional<Point>> at = absolute(args);
        if (!at) return at.status();
        const std::optional<MouseButton> button = args.button();
        if (!button) return argError(args);
        if (*at) out.push_back(MoveTo{**at});
        if (call.function == "mouseDown")
            out.push_back(MouseDown{*button});
        else
            out.push_back(MouseUp{*button});
        return Status::ok();
    }

    // scroll, vscroll, hscroll.
    Status scroll(const Call& call, std::vector<Action>& out) {
        Arguments args(call, {"clicks", "x", "y", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        const std::optional<double> clicks = args.number("clicks");
        if (!clicks) return argError(args);
        if (*clicks != std::floor(*clicks) || std::abs(*clicks) > kMaxScrollNotches)
            return Status::invalidArgument(
                "'clicks' must be a whole number from -1000 to "
                "1000");
        Result<std::optional<Point>> at = absolute(args);
        if (!at) return at.status();
        Scroll scroll;
        scroll.at = *at;
        // pyautogui scrolls up (and hscroll right) for positive clicks.
        if (call.function == "hscroll")
            scroll.dx = static_cast<int>(*clicks);
        else
            scroll.dy = -static_cast<int>(*clicks);
        out.push_back(scroll);
        return Status::ok();
    }

    // write, typewrite.
    Status writeText(const Call& call, std::vector<Action>& out) {
        Arguments args(call, {"message", "interval", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        const Value* message = args.get("message");
        if (message == nullptr) return Status::invalidArgument("missing argument 'message'");
        if (message->kind == Value::Kind::String) {
            out.push_back(TypeText{message->text});
            return Status::ok();
        }
        // typewrite(['a', 'enter']) presses each key in turn.
        const std::optional<std::vector<std::string>> keys = args.keys("message");
        if (!keys) return argError(args);
        if (keys->size() > kMaxKeyPresses)
            return Status::invalidArgument("more than 100 keys in one call");
        for (const std::string& key : *keys)
            out.push_back(PressKeys{{key}});
        return Status::ok();
    }

    Status press(const Call& call, std::vector<Action>& out) {
        Arguments args(call, {"keys", "presses", "interval", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        const std::optional<std::vector<std::string>> keys = args.keys("keys");
        if (!keys) return argError(args);
        const std::optional<int> presses = args.integer("presses", 1, 0, kMaxKeyPresses);
        if (!presses) return argError(args);
        if (keys->size() * static_cast<std::size_t>(*presses) > kMaxKeyPresses)
            return Status::invalidArgument("more than 100 key presses in one call");
        for (int i = 0; i < *presses; ++i)
            for (const std::string& key : *keys)
                out.push_back(PressKeys{{key}});
        return Status::ok();
    }

    Status hotkey(const Call& call, std::vector<Action>& out) {
        for (const auto& [name, v] : call.keywords)
            if (name != "interval" && name != "logScreenshot" && name != "_pause")
                return Status::invalidArgument("unexpected keyword argument '" + snippet(name, 30) +
                                               "'");
        Call keysOnly = call;  // the keys are variadic: bind none of them by name
        keysOnly.args.clear();
        keysOnly.keywords.clear();
        Arguments args(keysOnly, {});
        std::vector<const Value*> items;
        if (call.args.size() == 1 && call.args[0].kind == Value::Kind::List) {
            for (const Value& item : call.args[0].items)
                items.push_back(&item);
        } else {
            for (const Value& item : call.args)
                items.push_back(&item);
        }
        const std::optional<std::vector<std::string>> keys = args.keyList(items);
        if (!keys) return argError(args);
        out.push_back(PressKeys{*keys});
        return Status::ok();
    }

    // keyDown, keyUp.
    Status keyUpOrDown(const Call& call, std::vector<Action>& out) {
        Arguments args(call, {"key", "logScreenshot", "_pause"});
        if (!args.ok()) return argError(args);
        const std::optional<std::string> key = args.string("key");
        if (!key) return argError(args);
        Result<std::string> name = normalizeKeyName(*key);
        if (!name) return name.status();
        if (call.function == "keyDown")
            out.push_back(KeyDown{*name});
        else
            out.push_back(KeyUp{*name});
        return Status::ok();
    }

    const ParseOptions& m_options;
    ParsedStep& m_step;
    std::optional<Point> m_pointer;
};

void parseCode(std::string_view code, int firstLine, Translator& translator, ParsedStep& step) {
    Result<std::vector<Token>> tokens = Lexer(code, firstLine).tokenize();
    if (!tokens) {
        step.errors.push_back(tokens.status().message());
        return;
    }
    std::vector<std::string> errors;
    const std::vector<Call> calls = StatementParser(*tokens).parse(errors);
    for (std::string& error : errors)
        step.errors.push_back(std::move(error));
    for (const Call& call : calls)
        translator.translate(call);
}

}  // namespace

void parsePyautogui(std::string_view text, const ParseOptions& options, ParsedStep& step) {
    const std::vector<CodeBlock> blocks = codeBlocks(text);
    if (blocks.empty()) {
        // No fence: bare code, or WAIT/DONE/FAIL alone or after some prose.
        ParsedStep code;
        Translator bare(options, code);
        parseCode(text, 1, bare, code);
        if (code.errors.empty()) {
            step.actions = std::move(code.actions);
            return;
        }
        if (std::optional<Action> token = specialTokenAction(text)) {
            const std::string_view body = trim(text);
            const std::size_t lastLine = body.rfind('\n');
            if (lastLine != std::string_view::npos)
                step.thought = std::string(trim(body.substr(0, lastLine)));
            step.actions.push_back(std::move(*token));
            return;
        }
        step.actions = std::move(code.actions);
        step.errors = std::move(code.errors);
        return;
    }
    // Prose around the fences is the model's reasoning.
    Translator translator(options, step);
    std::string thought;
    std::size_t pos = 0;
    for (const CodeBlock& block : blocks) {
        const std::size_t blockStart = static_cast<std::size_t>(block.body.data() - text.data());
        const std::size_t fenceStart = text.rfind("```", blockStart);
        if (fenceStart != std::string_view::npos && fenceStart >= pos) {
            const std::string_view prose = trim(text.substr(pos, fenceStart - pos));
            if (!prose.empty()) thought += (thought.empty() ? "" : "\n") + std::string(prose);
        }
        pos = blockStart + block.body.size() + 3;
        const std::string lang(block.language);
        if (!lang.empty() && lang != "python" && lang != "py" && lang != "python3" &&
            lang != "WAIT" && lang != "DONE" && lang != "FAIL") {
            continue;  // a ```json or ```text block is commentary, not code
        }
        if (lang == "WAIT" || lang == "DONE" || lang == "FAIL") {
            // "```DONE```" on one line has no newline: the fence parser saw no language.
            parseCode(lang, block.firstLine, translator, step);
            continue;
        }
        parseCode(block.body, block.firstLine, translator, step);
    }
    if (pos < text.size()) {
        const std::string_view prose = trim(text.substr(pos));
        if (!prose.empty()) thought += (thought.empty() ? "" : "\n") + std::string(prose);
    }
    step.thought = std::move(thought);
}

}  // namespace iris::agent::detail
