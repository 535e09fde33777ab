// Arbiter's bridge for C++: the parts of arbiter_bridge.hpp that are not templates.
//
// Compiled once per bridge (CppLanguage.prepare, with the programs' own flags) into
// arbiter_bridge.o beside the precompiled header, and linked into both programs of a
// C++ task, so that a compile generates the code of what depends on the task (the
// codec's templates for its types, the dispatcher, the stubs) and not this again.
#include "arbiter_bridge.hpp"

namespace arbiter {

message_error::~message_error() = default;
wire_error::~wire_error() = default;
candidate_error::~candidate_error() = default;

template void put<std::string>(std::string& out, const std::string& value);
template std::string get<std::string>(Reader& in);

void put_count(std::string& out, char tag, std::size_t n) {
    out += tag;
    out += std::to_string(n);
    out += ':';
}

void Reader::expect(char tag, const char* what) {
    if (p_ == end_) throw wire_error(std::string("the value ends early, expected ") + what);
    if (*p_ != tag)
        throw wire_error(std::string("expected ") + what + ", got tag " + printable(*p_));
    ++p_;
}

void Reader::number(char stop, bool& negative, unsigned __int128& magnitude, bool& overflow) {
    negative = false;
    overflow = false;
    magnitude = 0;
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') {
        negative = true;
        ++p_;
    }
    const unsigned __int128 limit = (unsigned __int128)1 << 127;
    std::size_t digits = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
        unsigned d = unsigned(*p_ - '0');
        if (!overflow) {
            if (magnitude > (limit - d) / 10)
                overflow = true;
            else
                magnitude = magnitude * 10 + d;
        }
        ++p_;
        if (++digits > 100000) throw wire_error("a number runs too long");
    }
    if (digits == 0 || p_ == end_ || *p_ != stop) {
        p_ = start;
        throw wire_error("not a decimal number");
    }
    ++p_;
}

std::size_t Reader::count(char stop, std::size_t per_item) {
    bool negative, overflow;
    unsigned __int128 n;
    number(stop, negative, n, overflow);
    if ((negative && n != 0) || overflow || n > (unsigned __int128)(left() / per_item))
        throw wire_error("a count that cannot fit the frame");
    return std::size_t(n);
}

std::string Reader::bytes(std::size_t n) {
    if (n > left()) throw wire_error("a string runs past the frame");
    std::string s(p_, n);
    p_ += n;
    return s;
}

std::string Reader::printable(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    static const char hex[] = "0123456789abcdef";
    unsigned u = (unsigned char)c;
    return std::string("0x") + hex[u >> 4] + hex[u & 15];
}

[[noreturn]] void fail(const std::string& why) {
    std::fflush(nullptr);
    std::string line = "arbiter: " + why + "\n";
    (void)sys::write(2, line.data(), line.size());
    std::_Exit(3);
}

bool write_all(int fd, const char* data, std::size_t size) {
    static bool not_a_socket = false;
    while (size > 0) {
        ssize_t n = -1;
        if (!not_a_socket) {
            n = sys::send(fd, data, size, sys::msg_nosignal);
            if (n < 0 && errno == ENOTSOCK) not_a_socket = true;
        }
        if (not_a_socket) n = sys::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= std::size_t(n);
    }
    return true;
}

bool write_frame(int fd, const std::string& payload) {
    std::string head = std::to_string(payload.size()) + ":";
    return write_all(fd, head.data(), head.size()) && write_all(fd, payload.data(), payload.size());
}

bool read_frame(int fd, std::string& payload) {
    std::size_t size = 0;
    int digits = 0;
    for (;;) {
        char c;
        ssize_t n = sys::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ECONNRESET && digits == 0) return false;  // the peer is gone
        if (n < 0) throw wire_error("cannot read the channel: errno " + std::to_string(errno));
        if (n == 0) {
            if (digits) throw wire_error("the stream ended inside a frame's length");
            return false;
        }
        if (c == ':') break;
        if (c < '0' || c > '9' || digits >= 12)
            throw wire_error("a frame's length must be decimal digits");
        size = size * 10 + std::size_t(c - '0');
        ++digits;
    }
    if (digits == 0) throw wire_error("a frame's length is empty");
    if (size > max_frame_bytes) throw wire_error("a frame over the size limit");
    payload.assign(size, '\0');
    std::size_t got = 0;
    while (got < size) {
        ssize_t n = sys::read(fd, &payload[got], size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw wire_error("cannot read the channel: errno " + std::to_string(errno));
        if (n == 0) throw wire_error("the stream ended inside a frame");
        got += std::size_t(n);
    }
    return true;
}

void arity(std::size_t argc, std::size_t want) {
    if (argc != want) throw wire_error("a call with the wrong number of arguments");
}

int serve(dispatch_fn dispatch) {
    // A process the candidate forks comes back through here as well, holding the
    // channel: it never answers for the run (its reply would race the run's own,
    // and what the harness read would hang on timing), so it leaves at once.
    const int owner = sys::getpid();
    for (;;) {
        std::string request, reply;
        try {
            if (!read_frame(channel, request)) return 0;
            Reader in(request.data(), request.size());
            in.expect('l', "a request (a list)");
            if (in.count(':', 1) != 2) throw wire_error("a request is a list of two");
            std::string name = get<std::string>(in);
            in.expect('l', "the arguments (a list)");
            std::size_t argc = in.count(':', 1);
            if (!dispatch(name, in, argc, reply)) {
                reply = "x";
                put(reply, "no function named " + name);
            } else if (!in.at_end()) {
                throw wire_error("bytes after the request");
            }
        } catch (const wire_error& e) {
            fail(std::string("a malformed request: ") + e.what());
        }
        if (sys::getpid() != owner) sys::_exit(0);
        if (reply.size() > max_frame_bytes) {
            std::string over = "x";
            put(over, std::string("the reply is over the frame limit"));
            reply.swap(over);
        }
        if (!write_frame(channel, reply)) return 0;
    }
}

}  // namespace arbiter
