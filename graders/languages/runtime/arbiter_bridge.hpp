// Arbiter's bridge for C++: the wire codec (arbiter/graders/languages/wire.py) and the
// two ends of a call over descriptor 3.
//
// Its parts that are not templates are in arbiter_bridge.cpp, compiled once and linked
// into both programs of a C++ task, which include this header first:
//   * the harness (the task's tests, the prompt's helpers, one stub per declared
//     function): a stub is `return arbiter::call<R>("name", args...);`, which sends the
//     request frame and decodes the reply into R. A reply that does not decode into R,
//     an end of stream, or a malformed frame ends the harness with status 3 (a failed
//     test, never a pass); an `x` reply throws arbiter::candidate_error (a
//     std::exception whose what() is the candidate's message);
//   * the candidate's program (the candidate's code and a generated dispatcher):
//     `arbiter::serve(dispatch)` answers one request frame at a time until the end of
//     the stream.
//
// Values: bool <-> b; char, wchar_t, char16_t, char32_t <-> c; every other integer type
// (signed char and unsigned char included: int8_t, uint8_t) and enums <-> i; float,
// double, long double <-> f (binary64: a long double is narrowed); std::string <-> s;
// std::pair and tuple-likes <-> t; maps (a key_type and a mapped_type) <-> m;
// optionals (has_value()) <-> n or the value; other sequences (vector, list, deque,
// set, array, ...) <-> l; dynamic values (boost::any, std::any) by what they hold (an
// empty one is n) and, decoded, by the tag (i an int, f a double, c a char, s a string). Containers are recognised by their members, so this header
// includes none of them: the programs see only the names their own includes bring.
// Decoding is strict: a value of another tag, an integer out of the target's range, a
// character the target cannot hold, a tuple or array of another size, a repeated map
// key: a wire_error.
//
// Includes: <string> and what the codec needs, and the standard headers a HumanEval-X
// declaration adds to every prompt (<algorithm>, <math.h>, <stdlib.h>), so that the
// tests see the overloads they were written against (abs(double), say). Not <cstring>
// (its strlen(const char*) would outrank a task's strlen(string)) and no POSIX header.
#ifndef ARBITER_BRIDGE_HPP
#define ARBITER_BRIDGE_HPP

#include <math.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace arbiter {

// read(2), write(2) and send(2), declared here rather than through <unistd.h>, so
// that the POSIX names (link, nice, sync, truncate, ...) stay out of the programs'
// global scope.
namespace sys {
extern "C" {
ssize_t read(int fd, void* buf, size_t count);
ssize_t write(int fd, const void* buf, size_t count);
ssize_t send(int fd, const void* buf, size_t count, int flags);
// As <unistd.h> declares them (getpid's noexcept is glibc's __THROW under C++), so a
// program that includes it too compiles.
int getpid() noexcept;
[[noreturn]] void _exit(int status);
}
// Linux's MSG_NOSIGNAL: a peer that is gone is an error to report, not a SIGPIPE.
constexpr int msg_nosignal = 0x4000;
}  // namespace sys

// The descriptor both ends talk on.
constexpr int channel = 3;
// The largest frame either side sends or accepts (wire.MAX_FRAME_BYTES).
constexpr std::size_t max_frame_bytes = std::size_t(16) << 20;
constexpr int max_depth = 200;

class message_error : public std::exception {
  public:
    explicit message_error(std::string message) : message_(std::move(message)) {}
    const char* what() const noexcept override { return message_.c_str(); }
    ~message_error() override;

  private:
    std::string message_;
};

// Bytes that are not a well-formed frame or value, or a value of another type.
struct wire_error : message_error {
    using message_error::message_error;
    ~wire_error() override;
};

// The candidate's function threw (an `x` reply), raised in the harness.
struct candidate_error : message_error {
    using message_error::message_error;
    ~candidate_error() override;
};

// ---------------------------------------------------------------------------------
// Decoding: a cursor over one payload.

class Reader {
  public:
    Reader(const char* data, std::size_t size) : p_(data), end_(data + size) {}

    bool at_end() const { return p_ == end_; }
    bool next_is(char tag) const { return p_ != end_ && *p_ == tag; }
    std::size_t left() const { return std::size_t(end_ - p_); }

    char take() {
        if (p_ == end_) throw wire_error("the value ends early");
        return *p_++;
    }

    void expect(char tag, const char* what);

    // A decimal number ended by `stop`: its sign and magnitude (overflow past 2^127).
    void number(char stop, bool& negative, unsigned __int128& magnitude, bool& overflow);

    // A count or length ended by `stop`: non-negative and no larger than the bytes left
    // (each item takes at least `per_item` bytes).
    std::size_t count(char stop, std::size_t per_item);

    std::string bytes(std::size_t n);

    // One level of nesting, for the time a container is read.
    struct Nest {
        explicit Nest(Reader& r) : r_(r) {
            if (++r_.depth_ > max_depth) throw wire_error("values nested too deep");
        }
        ~Nest() { --r_.depth_; }
        Nest(const Nest&) = delete;
        Nest& operator=(const Nest&) = delete;
        Reader& r_;
    };

    static std::string printable(char c);

  private:
    const char* p_;
    const char* end_;
    int depth_ = 0;
};

// ---------------------------------------------------------------------------------
// What kind of value a type is (by its members: no container header is needed).

template <class T>
using value_t = std::remove_cv_t<std::remove_reference_t<T>>;

template <class...>
constexpr bool always_false = false;

template <class T>
constexpr bool is_character_v = std::is_same<T, char>::value || std::is_same<T, wchar_t>::value ||
                                std::is_same<T, char16_t>::value ||
                                std::is_same<T, char32_t>::value;

template <class T>
struct is_std_string : std::false_type {};
template <class Traits, class Alloc>
struct is_std_string<std::basic_string<char, Traits, Alloc>> : std::true_type {};

template <class T>
struct is_std_pair : std::false_type {};
template <class A, class B>
struct is_std_pair<std::pair<A, B>> : std::true_type {};

template <class T, class = void>
struct is_iterable : std::false_type {};
template <class T>
struct is_iterable<T, std::void_t<typename T::value_type, decltype(std::declval<const T&>().begin()),
                                  decltype(std::declval<const T&>().end())>> : std::true_type {};

template <class T, class = void>
struct is_map_like : std::false_type {};
template <class T>
struct is_map_like<T, std::void_t<typename T::key_type, typename T::mapped_type,
                                  decltype(std::declval<T&>().emplace(
                                      std::declval<typename T::key_type>(),
                                      std::declval<typename T::mapped_type>()))>>
    : is_iterable<T> {};

template <class T, class = void>
struct has_push_back : std::false_type {};
template <class T>
struct has_push_back<T, std::void_t<decltype(std::declval<T&>().push_back(
                            std::declval<typename T::value_type>()))>> : std::true_type {};

template <class T, class = void>
struct has_insert : std::false_type {};
template <class T>
struct has_insert<T, std::void_t<decltype(std::declval<T&>().insert(
                         std::declval<typename T::value_type>()))>> : std::true_type {};

template <class T, class = void>
struct has_tuple_size : std::false_type {};
template <class T>
struct has_tuple_size<T, std::void_t<decltype(std::tuple_size<T>::value)>> : std::true_type {};

template <class T, class = void>
struct is_optional_like : std::false_type {};
template <class T>
struct is_optional_like<T, std::void_t<typename T::value_type,
                                       decltype(bool(std::declval<const T&>().has_value())),
                                       decltype(*std::declval<const T&>()),
                                       decltype(std::declval<T&>().reset())>>
    : std::is_default_constructible<T> {};

// A dynamic value (boost::any, std::any): a type() and an empty() or a has_value().
template <class T, class = void>
struct has_empty : std::false_type {};
template <class T>
struct has_empty<T, std::void_t<decltype(bool(std::declval<const T&>().empty()))>>
    : std::true_type {};

template <class T, class = void>
struct has_has_value : std::false_type {};
template <class T>
struct has_has_value<T, std::void_t<decltype(bool(std::declval<const T&>().has_value()))>>
    : std::true_type {};

template <class T, class = void>
struct is_any_like : std::false_type {};
template <class T>
struct is_any_like<T, std::void_t<decltype(std::declval<const T&>().type())>>
    : std::integral_constant<bool, (has_empty<T>::value || has_has_value<T>::value) &&
                                       !is_iterable<T>::value> {};

// Makes `any_cast<V>(&value)` parse here; argument-dependent lookup finds the real one
// (boost::any_cast, std::any_cast), whose pointer form answers nullptr for another type.
struct any_cast_tag {};
template <class V>
void any_cast(any_cast_tag);

// The integer limits of T (an integer type or an enum's underlying type), as 128 bits.
template <class T>
constexpr unsigned __int128 most() {
    return (unsigned __int128)std::numeric_limits<T>::max();
}

// ---------------------------------------------------------------------------------
// Encoding and decoding: put(out, value) appends a value; get<T>(reader) reads one.

template <class T>
void put(std::string& out, const T& value);
template <class T>
value_t<T> get(Reader& in);

void put_count(std::string& out, char tag, std::size_t n);

template <class T>
void put_integer(std::string& out, T v) {
    out += 'i';
    out += std::to_string(v);
    out += ';';
}

template <class T>
T get_integer(Reader& in) {
    in.expect('i', "an integer");
    bool negative, overflow;
    unsigned __int128 m;
    in.number(';', negative, m, overflow);
    if (overflow) throw wire_error("an integer out of range");
    if (negative && m != 0) {
        if (!std::is_signed<T>::value) throw wire_error("a negative integer for an unsigned type");
        if (m > most<T>() + 1) throw wire_error("an integer out of range");
        return T(-(__int128)(m - 1) - 1);
    }
    if (m > most<T>()) throw wire_error("an integer out of range");
    return T(m);
}

template <class Tuple, std::size_t... I>
void put_tuple(std::string& out, const Tuple& v, std::index_sequence<I...>) {
    put_count(out, 't', sizeof...(I));
    (put(out, get<I>(v)), ...);  // std::get, found by argument-dependent lookup
}

template <class Tuple, std::size_t... I>
Tuple get_tuple(Reader& in, std::index_sequence<I...>) {
    // A braced list evaluates its items in order.
    return Tuple{get<std::tuple_element_t<I, Tuple>>(in)...};
}

template <class V, class A>
bool put_if_holds(std::string& out, const A& value) {
    const V* held = any_cast<V>(&value);
    if (held == nullptr) return false;
    if constexpr (std::is_pointer<V>::value)
        put(out, std::string(*held));  // a C string
    else
        put(out, *held);
    return true;
}

// A dynamic value by what it holds: empty is n; a number, a character, a string is its
// own tag. It holds anything else: a wire_error.
template <class A>
void put_any(std::string& out, const A& value) {
    bool empty;
    if constexpr (has_empty<A>::value)
        empty = value.empty();
    else
        empty = !value.has_value();
    if (empty) {
        out += 'n';
        return;
    }
    if (put_if_holds<bool>(out, value) || put_if_holds<char>(out, value) ||
        put_if_holds<int>(out, value) || put_if_holds<double>(out, value) ||
        put_if_holds<std::string>(out, value) || put_if_holds<long long>(out, value) ||
        put_if_holds<long>(out, value) || put_if_holds<float>(out, value) ||
        put_if_holds<const char*>(out, value) || put_if_holds<char*>(out, value) ||
        put_if_holds<unsigned>(out, value) || put_if_holds<unsigned long>(out, value) ||
        put_if_holds<unsigned long long>(out, value) || put_if_holds<short>(out, value) ||
        put_if_holds<unsigned short>(out, value) || put_if_holds<signed char>(out, value) ||
        put_if_holds<unsigned char>(out, value) || put_if_holds<long double>(out, value) ||
        put_if_holds<char32_t>(out, value) || put_if_holds<char16_t>(out, value) ||
        put_if_holds<wchar_t>(out, value))
        return;
    throw wire_error("a dynamic value that holds a type no wire value stands for");
}

// A dynamic value by its tag (wire.py: "decoded by tag"): n and u empty, b a bool, i an
// int (a long long, an unsigned long long when it does not fit), f a double, c a char
// (a char32_t past 255), s a std::string.
template <class A>
A get_any(Reader& in) {
    if (in.next_is('n') || in.next_is('u')) {
        in.take();
        return A();
    }
    if (in.next_is('b')) return A(get<bool>(in));
    if (in.next_is('f')) return A(get<double>(in));
    if (in.next_is('s')) return A(get<std::string>(in));
    if (in.next_is('c')) {
        char32_t code = get<char32_t>(in);
        if (code <= 255) return A(char((unsigned char)code));
        return A(code);
    }
    if (in.next_is('i')) {
        in.take();
        bool negative, overflow;
        unsigned __int128 m;
        in.number(';', negative, m, overflow);
        if (overflow) throw wire_error("an integer out of range");
        if (!negative && m <= most<int>()) return A(int(m));
        if (negative && m <= most<int>() + 1) return A(int(-(long long)(m - 1) - 1));
        if (!negative && m <= most<long long>()) return A((long long)m);
        if (negative && m <= most<long long>() + 1) return A((long long)(-(__int128)(m - 1) - 1));
        if (!negative && m <= most<unsigned long long>()) return A((unsigned long long)m);
        throw wire_error("an integer out of range");
    }
    throw wire_error("a dynamic value of a kind this side cannot hold (a list, tuple or map)");
}

template <class T>
void put(std::string& out, const T& value) {
    using U = value_t<T>;
    if constexpr (std::is_same<U, bool>::value) {
        out += value ? "b1" : "b0";
    } else if constexpr (is_character_v<U>) {
        unsigned long code = std::is_same<U, char>::value ? (unsigned long)(unsigned char)value
                                                          : (unsigned long)value;
        out += 'c';
        out += std::to_string(code);
        out += ';';
    } else if constexpr (std::is_integral<U>::value) {
        put_integer(out, value);
    } else if constexpr (std::is_enum<U>::value) {
        put_integer(out, static_cast<std::underlying_type_t<U>>(value));
    } else if constexpr (std::is_floating_point<U>::value) {
        double d = double(value);
        std::uint64_t bits;
        static_assert(sizeof bits == sizeof d, "binary64");
        __builtin_memcpy(&bits, &d, sizeof bits);
        static const char hex[] = "0123456789abcdef";
        out += 'f';
        for (int shift = 60; shift >= 0; shift -= 4) out += hex[(bits >> shift) & 0xf];
    } else if constexpr (is_std_string<U>::value) {
        put_count(out, 's', value.size());
        out.append(value.data(), value.size());
    } else if constexpr (is_any_like<U>::value) {
        put_any(out, value);
    } else if constexpr (is_std_pair<U>::value) {
        out += "t2:";
        put(out, value.first);
        put(out, value.second);
    } else if constexpr (is_optional_like<U>::value) {
        if (value.has_value())
            put(out, *value);
        else
            out += 'n';
    } else if constexpr (is_map_like<U>::value) {
        std::size_t n = 0;
        for (auto it = value.begin(); it != value.end(); ++it) ++n;
        put_count(out, 'm', n);
        for (const auto& kv : value) {
            put(out, kv.first);
            put(out, kv.second);
        }
    } else if constexpr (is_iterable<U>::value) {
        std::size_t n = 0;
        for (auto it = value.begin(); it != value.end(); ++it) ++n;
        put_count(out, 'l', n);
        for (auto it = value.begin(); it != value.end(); ++it)
            put<typename U::value_type>(out, *it);
    } else if constexpr (has_tuple_size<U>::value) {
        put_tuple(out, value, std::make_index_sequence<std::tuple_size<U>::value>{});
    } else {
        static_assert(always_false<U>, "arbiter: no wire codec for this type");
    }
}

template <class T>
value_t<T> get(Reader& in) {
    using U = value_t<T>;
    if constexpr (std::is_same<U, bool>::value) {
        in.expect('b', "a bool");
        char f = in.take();
        if (f != '0' && f != '1') throw wire_error("a bool must be b0 or b1");
        return f == '1';
    } else if constexpr (is_character_v<U>) {
        in.expect('c', "a character");
        bool negative, overflow;
        unsigned __int128 m;
        in.number(';', negative, m, overflow);
        if (overflow || (negative && m != 0) || m > 0x10FFFF)
            throw wire_error("no character has this code");
        if (std::is_same<U, char>::value) {
            if (m > 255) throw wire_error("a character a char cannot hold");
            return U((unsigned char)m);
        }
        if (m > (unsigned __int128)std::numeric_limits<std::make_unsigned_t<U>>::max())
            throw wire_error("a character this type cannot hold");
        return U(m);
    } else if constexpr (std::is_integral<U>::value) {
        return get_integer<U>(in);
    } else if constexpr (std::is_enum<U>::value) {
        return static_cast<U>(get_integer<std::underlying_type_t<U>>(in));
    } else if constexpr (std::is_floating_point<U>::value) {
        in.expect('f', "a float");
        std::uint64_t bits = 0;
        for (int i = 0; i < 16; ++i) {
            char c = in.take();
            unsigned d;
            if (c >= '0' && c <= '9')
                d = unsigned(c - '0');
            else if (c >= 'a' && c <= 'f')
                d = unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                d = unsigned(c - 'A' + 10);
            else
                throw wire_error("bad float bits");
            bits = (bits << 4) | d;
        }
        double d;
        __builtin_memcpy(&d, &bits, sizeof d);
        return U(d);
    } else if constexpr (is_std_string<U>::value) {
        in.expect('s', "a string");
        std::size_t n = in.count(':', 1);
        std::string raw = in.bytes(n);
        return U(raw.data(), raw.size());
    } else if constexpr (is_any_like<U>::value) {
        return get_any<U>(in);
    } else if constexpr (is_std_pair<U>::value) {
        in.expect('t', "a pair");
        Reader::Nest nest(in);
        if (in.count(':', 1) != 2) throw wire_error("a tuple of another size for a pair");
        auto first = get<typename U::first_type>(in);
        auto second = get<typename U::second_type>(in);
        return U(std::move(first), std::move(second));
    } else if constexpr (is_optional_like<U>::value) {
        if (in.next_is('n') || in.next_is('u')) {
            in.take();
            return U();
        }
        return U(get<typename U::value_type>(in));
    } else if constexpr (is_map_like<U>::value) {
        in.expect('m', "a map");
        Reader::Nest nest(in);
        std::size_t n = in.count(':', 2);
        U m;
        for (std::size_t i = 0; i < n; ++i) {
            auto k = get<typename U::key_type>(in);
            auto v = get<typename U::mapped_type>(in);
            auto placed = m.emplace(std::move(k), std::move(v));
            if constexpr (is_std_pair<decltype(placed)>::value) {  // not a multimap
                if (!placed.second) throw wire_error("a map with a repeated key");
            }
        }
        return m;
    } else if constexpr (is_iterable<U>::value) {
        using V = typename U::value_type;
        in.expect('l', "a sequence");
        Reader::Nest nest(in);
        std::size_t n = in.count(':', 1);
        if constexpr (has_push_back<U>::value || has_insert<U>::value) {
            U c;
            for (std::size_t i = 0; i < n; ++i) {
                if constexpr (has_push_back<U>::value)
                    c.push_back(get<V>(in));
                else
                    c.insert(get<V>(in));
            }
            return c;
        } else if constexpr (has_tuple_size<U>::value) {  // std::array
            if (n != std::tuple_size<U>::value) throw wire_error("an array of another length");
            U c{};
            for (auto it = c.begin(); it != c.end(); ++it) *it = get<V>(in);
            return c;
        } else {
            static_assert(always_false<U>, "arbiter: a sequence that cannot be filled");
        }
    } else if constexpr (has_tuple_size<U>::value) {
        in.expect('t', "a tuple");
        Reader::Nest nest(in);
        if (in.count(':', 1) != std::tuple_size<U>::value)
            throw wire_error("a tuple of another size");
        return get_tuple<U>(in, std::make_index_sequence<std::tuple_size<U>::value>{});
    } else {
        static_assert(always_false<U>, "arbiter: no wire codec for this type");
    }
}

// Every program encodes and decodes strings (a request's name, an exception's message):
// their code is compiled once, in arbiter_bridge.cpp.
extern template void put<std::string>(std::string& out, const std::string& value);
extern template std::string get<std::string>(Reader& in);

// ---------------------------------------------------------------------------------
// Frames on a descriptor.

[[noreturn]] void fail(const std::string& why);

bool write_all(int fd, const char* data, std::size_t size);

bool write_frame(int fd, const std::string& payload);

// One frame's payload; false at a clean end of stream. A malformed, oversized or
// cut-short frame is a wire_error.
bool read_frame(int fd, std::string& payload);

// ---------------------------------------------------------------------------------
// The harness's end: a stub's call.

template <class R, class... A>
R call(const char* name, const A&... args) {
    std::string request = "l2:";
    try {
        put(request, std::string(name));
        put_count(request, 'l', sizeof...(A));
        (put(request, args), ...);
    } catch (const wire_error& e) {
        fail(std::string("cannot encode the arguments of ") + name + ": " + e.what());
    }
    if (request.size() > max_frame_bytes)
        fail(std::string("the call of ") + name + " is over the frame limit");
    if (!write_frame(channel, request))
        fail(std::string("cannot send the call of ") + name + " to the candidate's program");
    std::string reply;
    bool got = false;
    try {
        got = read_frame(channel, reply);
    } catch (const wire_error& e) {
        fail(std::string("the reply to the call of ") + name + " is not a frame: " + e.what());
    }
    if (!got)
        fail(std::string("the candidate's program ended without answering the call of ") + name);
    Reader in(reply.data(), reply.size());
    std::string message;
    try {
        char kind = in.take();
        if (kind == 'r') {
            if constexpr (std::is_void<R>::value) {
                in.expect('n', "null (a void function's reply)");
                if (!in.at_end()) throw wire_error("bytes after the value");
                return;
            } else {
                value_t<R> value = get<value_t<R>>(in);
                if (!in.at_end()) throw wire_error("bytes after the value");
                return value;
            }
        }
        if (kind != 'x') throw wire_error("a reply must start with r or x");
        message = get<std::string>(in);
        if (!in.at_end()) throw wire_error("bytes after the value");
    } catch (const wire_error& e) {
        fail(std::string("the reply to the call of ") + name + " is not a value of its type: " +
             e.what());
    }
    throw candidate_error(std::string(name) + " threw: " + message);
}

// ---------------------------------------------------------------------------------
// The candidate's end: the dispatcher.

// A generated dispatcher: given the function's name and the reader at its first
// argument (argc of them), decode the arguments, call, and set `reply`; false when
// no function has that name.
using dispatch_fn = bool (*)(const std::string& name, Reader& args, std::size_t argc,
                             std::string& reply);

void arity(std::size_t argc, std::size_t want);

// Run `fn` (the call of the candidate's function) and encode what it returned, or
// what it threw. Running out of memory is not an answer: it ends the program as an
// uncaught std::bad_alloc does.
template <class R, class F>
void answer(std::string& reply, F&& fn) {
    try {
        if constexpr (std::is_void<R>::value) {
            fn();
            reply = "rn";
        } else {
            value_t<R> value = fn();
            std::string out = "r";
            put(out, value);
            reply.swap(out);
        }
    } catch (const std::bad_alloc&) {
        throw;
    } catch (const std::exception& e) {
        reply = "x";
        put(reply, std::string(e.what()));
    } catch (...) {
        reply = "x";
        put(reply, std::string("an exception that is not a std::exception"));
    }
}

int serve(dispatch_fn dispatch);

}  // namespace arbiter

#endif  // ARBITER_BRIDGE_HPP
