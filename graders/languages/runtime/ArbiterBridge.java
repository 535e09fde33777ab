// Arbiter's bridge for Java: the wire format of arbiter.graders.languages.wire.
//
// Both sides of a Java `test_program` task use this one class:
//  * the harness (the task's tests, the prompt's helpers, no candidate code): each stubbed
//    method calls ArbiterBridge.call(name, method, args), which sends the call on descriptor 3,
//    reads the reply and converts it to the stub's declared (generic) return type. Anything but
//    a well-formed reply of that type (end of stream, a malformed frame, a type mismatch, an
//    exception reply) stops the harness at once with a nonzero status: a failed test that no
//    `catch` in the tests can turn into a pass;
//  * the candidate's dispatcher: ArbiterBridge.serve(className) answers each request by calling
//    the candidate's method (found by name and arity, its arguments converted to the method's
//    generic parameter types) and replies with the returned value, encoded by its runtime class.
//
// Values (see wire.py): n null / empty Optional, u undefined, b0/b1, i<decimal>; integers of any
// size, f<16 hex> binary64 bits, c<code>; characters, s<len>:<utf-8>, l/t/m containers.
// Decoding goes in two steps: bytes to a raw tree (tags kept apart: BigInteger, Double, RawChar,
// String, Boolean, ArrayList, RawTuple, RawMap), then the raw tree to a java.lang.reflect.Type.
// Descriptor 3 is opened through java.io.FileDescriptor's private field (it is a socket, which
// /dev/fd/3 cannot open): the run needs --add-opens java.base/java.io=ALL-UNNAMED.

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Queue;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

final class ArbiterBridge {
    private ArbiterBridge() {}

    /** The largest frame either side sends or accepts (wire.MAX_FRAME_BYTES). */
    static final int MAX_FRAME = 16 << 20;
    static final int MAX_DEPTH = 200;
    /** The status of a harness stopped by a failed call. */
    static final int FAILED_CALL = 3;

    /** Bytes that are not a well-formed frame or value, or a value that is not of the type. */
    static final class WireError extends Exception {
        private static final long serialVersionUID = 1L;

        WireError(String message) {
            super(message);
        }
    }

    /** JavaScript's undefined (u), read as null by every Java type. */
    static final Object UNDEFINED = new Object() {
        @Override
        public String toString() {
            return "undefined";
        }
    };

    /** A decoded character (c), kept apart from a one-letter string. */
    static final class RawChar {
        final int code;

        RawChar(int code) {
            this.code = code;
        }
    }

    /** A decoded tuple (t). */
    static final class RawTuple {
        final List<Object> items;

        RawTuple(List<Object> items) {
            this.items = items;
        }
    }

    /** A decoded map (m): its keys and values in order. */
    static final class RawMap {
        final List<Object> keys;
        final List<Object> values;

        RawMap(List<Object> keys, List<Object> values) {
            this.keys = keys;
            this.values = values;
        }
    }

    // ------------------------------------------------------------------ descriptor 3

    private static InputStream in;
    private static OutputStream out;

    private static void open() throws Exception {
        if (in != null) return;
        FileDescriptor fd = new FileDescriptor();
        Field field = FileDescriptor.class.getDeclaredField("fd");
        field.setAccessible(true);
        field.setInt(fd, 3);
        in = new FileInputStream(fd);
        out = new FileOutputStream(fd);
    }

    /** One frame's payload, or null at a clean end of stream. */
    static byte[] readFrame(InputStream stream) throws IOException, WireError {
        StringBuilder head = new StringBuilder();
        while (true) {
            int b = stream.read();
            if (b < 0) {
                if (head.length() > 0) throw new WireError("the stream ended inside a frame's length");
                return null;
            }
            if (b == ':') break;
            if (b < '0' || b > '9' || head.length() > 12) {
                throw new WireError("a frame's length must be decimal digits");
            }
            head.append((char) b);
        }
        if (head.length() == 0) throw new WireError("a frame's length is empty");
        long size = Long.parseLong(head.toString());
        if (size > MAX_FRAME) {
            throw new WireError("a frame of " + size + " bytes is over the limit of " + MAX_FRAME);
        }
        byte[] data = new byte[(int) size];
        int got = 0;
        while (got < data.length) {
            int n = stream.read(data, got, data.length - got);
            if (n < 0) throw new WireError("the stream ended inside a frame");
            got += n;
        }
        return data;
    }

    static void writeFrame(OutputStream stream, byte[] payload) throws IOException {
        stream.write((payload.length + ":").getBytes(StandardCharsets.US_ASCII));
        stream.write(payload);
        stream.flush();
    }

    // ------------------------------------------------------------------ decoding

    /** Decode exactly one value that fills {@code data}, to its raw tree. */
    static Object decode(byte[] data) throws WireError {
        Decoder d = new Decoder(data);
        Object value = d.value(0);
        if (d.pos != data.length) throw new WireError((data.length - d.pos) + " bytes after the value");
        return value;
    }

    private static final class Decoder {
        final byte[] data;
        int pos;

        Decoder(byte[] data) {
            this.data = data;
        }

        BigInteger number(byte stop) throws WireError {
            int start = pos;
            int end = start;
            while (end < data.length && data[end] != stop) {
                if (end - start > 100_000) break;
                end++;
            }
            if (end >= data.length || end - start > 100_000) {
                throw new WireError("unterminated number at byte " + start);
            }
            int digits = start;
            if (digits < end && data[digits] == '-') digits++;
            if (digits == end) throw new WireError("not a decimal number at byte " + start);
            for (int k = digits; k < end; k++) {
                if (data[k] < '0' || data[k] > '9') throw new WireError("not a decimal number at byte " + start);
            }
            pos = end + 1;
            return new BigInteger(new String(data, start, end - start, StandardCharsets.US_ASCII));
        }

        int count() throws WireError {
            BigInteger n = number((byte) ':');
            if (n.signum() < 0 || n.compareTo(BigInteger.valueOf(data.length)) > 0) {
                throw new WireError("a count of " + n + " cannot fit the frame");
            }
            return n.intValue();
        }

        Object value(int depth) throws WireError {
            if (depth > MAX_DEPTH) throw new WireError("values nested too deep");
            if (pos >= data.length) throw new WireError("the value ends early");
            byte tag = data[pos++];
            switch (tag) {
                case 'n':
                    return null;
                case 'u':
                    return UNDEFINED;
                case 'b': {
                    if (pos >= data.length || (data[pos] != '0' && data[pos] != '1')) {
                        throw new WireError("a bool must be b0 or b1, at byte " + pos);
                    }
                    return data[pos++] == '1';
                }
                case 'i':
                    return number((byte) ';');
                case 'f': {
                    if (pos + 16 > data.length) throw new WireError("a float needs 16 hex digits, at byte " + pos);
                    long bits = 0;
                    for (int k = 0; k < 16; k++) {
                        int h = Character.digit(data[pos + k], 16);
                        if (h < 0) throw new WireError("bad float bits at byte " + pos);
                        bits = (bits << 4) | h;
                    }
                    pos += 16;
                    return Double.longBitsToDouble(bits);
                }
                case 'c': {
                    BigInteger code = number((byte) ';');
                    if (code.signum() < 0 || code.compareTo(BigInteger.valueOf(0x10FFFF)) > 0) {
                        throw new WireError("no character has code " + code);
                    }
                    return new RawChar(code.intValue());
                }
                case 's': {
                    int size = count();
                    if (pos + size > data.length) throw new WireError("a string runs past the frame");
                    String text = utf8(data, pos, size);
                    pos += size;
                    return text;
                }
                case 'l':
                case 't':
                case 'm': {
                    int n = count();
                    if (tag == 'm') {
                        List<Object> keys = new ArrayList<>(), values = new ArrayList<>();
                        for (int k = 0; k < n; k++) {
                            keys.add(value(depth + 1));
                            values.add(value(depth + 1));
                        }
                        return new RawMap(keys, values);
                    }
                    List<Object> items = new ArrayList<>();
                    for (int k = 0; k < n; k++) items.add(value(depth + 1));
                    return tag == 'l' ? items : new RawTuple(items);
                }
                default:
                    throw new WireError("unknown tag " + (char) (tag & 0xff) + " at byte " + (pos - 1));
            }
        }
    }

    /** Strict UTF-8 that lets surrogates through, as Python's "surrogatepass". */
    static String utf8(byte[] b, int start, int size) throws WireError {
        StringBuilder s = new StringBuilder(size);
        int p = start, end = start + size;
        while (p < end) {
            int c = b[p] & 0xff;
            int cp, need, min;
            if (c < 0x80) {
                s.append((char) c);
                p++;
                continue;
            } else if (c >= 0xC2 && c <= 0xDF) {
                cp = c & 0x1F; need = 1; min = 0x80;
            } else if (c >= 0xE0 && c <= 0xEF) {
                cp = c & 0x0F; need = 2; min = 0x800;
            } else if (c >= 0xF0 && c <= 0xF4) {
                cp = c & 0x07; need = 3; min = 0x10000;
            } else {
                throw new WireError("a string is not UTF-8");
            }
            if (p + need >= end) throw new WireError("a string is not UTF-8");
            for (int k = 1; k <= need; k++) {
                int d = b[p + k] & 0xff;
                if ((d & 0xC0) != 0x80) throw new WireError("a string is not UTF-8");
                cp = (cp << 6) | (d & 0x3F);
            }
            if (cp < min || cp > 0x10FFFF) throw new WireError("a string is not UTF-8");
            s.appendCodePoint(cp);
            p += need + 1;
        }
        return s.toString();
    }

    // ------------------------------------------------------------------ encoding

    private static final class Out {
        byte[] buf = new byte[256];
        int len;

        void put(byte[] bytes) throws WireError {
            if ((long) len + bytes.length > MAX_FRAME) {
                throw new WireError("the value is over the frame limit of " + MAX_FRAME + " bytes");
            }
            if (len + bytes.length > buf.length) {
                buf = java.util.Arrays.copyOf(buf, Math.max(buf.length * 2, len + bytes.length));
            }
            System.arraycopy(bytes, 0, buf, len, bytes.length);
            len += bytes.length;
        }

        void put(String ascii) throws WireError {
            put(ascii.getBytes(StandardCharsets.US_ASCII));
        }

        byte[] bytes() {
            return java.util.Arrays.copyOf(buf, len);
        }
    }

    /** Encode a Java value by its runtime class. */
    static byte[] encode(Object value) throws WireError {
        Out o = new Out();
        encode(value, o, 0);
        return o.bytes();
    }

    static byte[] utf8(String text) {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream(text.length() + 8);
        int k = 0;
        while (k < text.length()) {
            int cp = text.codePointAt(k); // a lone surrogate comes back as itself
            k += Character.charCount(cp);
            if (cp < 0x80) {
                b.write(cp);
            } else if (cp < 0x800) {
                b.write(0xC0 | (cp >> 6));
                b.write(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                b.write(0xE0 | (cp >> 12));
                b.write(0x80 | ((cp >> 6) & 0x3F));
                b.write(0x80 | (cp & 0x3F));
            } else {
                b.write(0xF0 | (cp >> 18));
                b.write(0x80 | ((cp >> 12) & 0x3F));
                b.write(0x80 | ((cp >> 6) & 0x3F));
                b.write(0x80 | (cp & 0x3F));
            }
        }
        return b.toByteArray();
    }

    private static void encode(Object v, Out o, int depth) throws WireError {
        if (depth > MAX_DEPTH) throw new WireError("the value is nested too deep");
        if (v == null) {
            o.put("n");
        } else if (v == UNDEFINED) {
            o.put("u");
        } else if (v instanceof Boolean) {
            o.put((Boolean) v ? "b1" : "b0");
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short
                || v instanceof Byte || v instanceof BigInteger) {
            o.put("i" + v + ";");
        } else if (v instanceof Double || v instanceof Float) {
            long bits = Double.doubleToRawLongBits(((Number) v).doubleValue());
            String hex = Long.toHexString(bits);
            o.put("f" + "0000000000000000".substring(hex.length()) + hex);
        } else if (v instanceof Character) {
            o.put("c" + (int) (Character) v + ";");
        } else if (v instanceof RawChar) {
            o.put("c" + ((RawChar) v).code + ";");
        } else if (v instanceof CharSequence) {
            byte[] raw = utf8(v.toString());
            o.put("s" + raw.length + ":");
            o.put(raw);
        } else if (v instanceof Optional) {
            Optional<?> opt = (Optional<?>) v;
            encode(opt.isPresent() ? opt.get() : null, o, depth);
        } else if (v instanceof OptionalInt) {
            OptionalInt opt = (OptionalInt) v;
            encode(opt.isPresent() ? (Object) opt.getAsInt() : null, o, depth);
        } else if (v instanceof OptionalLong) {
            OptionalLong opt = (OptionalLong) v;
            encode(opt.isPresent() ? (Object) opt.getAsLong() : null, o, depth);
        } else if (v instanceof OptionalDouble) {
            OptionalDouble opt = (OptionalDouble) v;
            encode(opt.isPresent() ? (Object) opt.getAsDouble() : null, o, depth);
        } else if (v instanceof RawTuple) {
            List<Object> items = ((RawTuple) v).items;
            o.put("t" + items.size() + ":");
            for (Object item : items) encode(item, o, depth + 1);
        } else if (v instanceof Map.Entry) {
            Map.Entry<?, ?> e = (Map.Entry<?, ?>) v;
            o.put("t2:");
            encode(e.getKey(), o, depth + 1);
            encode(e.getValue(), o, depth + 1);
        } else if (v instanceof Map) {
            List<Map.Entry<?, ?>> entries = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                entries.add(e);
                if (entries.size() > MAX_FRAME) throw new WireError("the map is over the frame limit");
            }
            o.put("m" + entries.size() + ":");
            for (Map.Entry<?, ?> e : entries) {
                encode(e.getKey(), o, depth + 1);
                encode(e.getValue(), o, depth + 1);
            }
        } else if (v instanceof RawMap) {
            RawMap m = (RawMap) v;
            o.put("m" + m.keys.size() + ":");
            for (int k = 0; k < m.keys.size(); k++) {
                encode(m.keys.get(k), o, depth + 1);
                encode(m.values.get(k), o, depth + 1);
            }
        } else if (v instanceof Iterable) {
            List<Object> items = new ArrayList<>();
            for (Object item : (Iterable<?>) v) {
                items.add(item);
                if (items.size() > MAX_FRAME) throw new WireError("the collection is over the frame limit");
            }
            o.put("l" + items.size() + ":");
            for (Object item : items) encode(item, o, depth + 1);
        } else if (v.getClass().isArray()) {
            int n = Array.getLength(v);
            o.put("l" + n + ":");
            for (int k = 0; k < n; k++) encode(Array.get(v, k), o, depth + 1);
        } else {
            throw new WireError("cannot encode a " + v.getClass().getName());
        }
    }

    // ------------------------------------------------------------------ raw tree -> Java type

    private static String tagOf(Object raw) {
        if (raw == null) return "null";
        if (raw == UNDEFINED) return "undefined";
        if (raw instanceof Boolean) return "a bool";
        if (raw instanceof BigInteger) return "an integer";
        if (raw instanceof Double) return "a float";
        if (raw instanceof RawChar) return "a character";
        if (raw instanceof String) return "a string";
        if (raw instanceof RawTuple) return "a tuple";
        if (raw instanceof RawMap) return "a map";
        return "a list";
    }

    private static WireError mismatch(Object raw, Type type) {
        return new WireError("expected " + type.getTypeName() + ", got " + tagOf(raw));
    }

    private static final BigInteger MIN_LONG = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger MAX_LONG = BigInteger.valueOf(Long.MAX_VALUE);

    private static long integer(Object raw, Type type, long min, long max) throws WireError {
        if (!(raw instanceof BigInteger)) throw mismatch(raw, type);
        BigInteger v = (BigInteger) raw;
        if (v.compareTo(BigInteger.valueOf(min)) < 0 || v.compareTo(BigInteger.valueOf(max)) > 0) {
            throw new WireError("the integer " + v + " does not fit " + type.getTypeName());
        }
        return v.longValue();
    }

    private static double real(Object raw, Type type) throws WireError {
        if (raw instanceof Double) return (Double) raw;
        if (raw instanceof BigInteger) {
            BigInteger v = (BigInteger) raw;
            double d = v.doubleValue();
            if (!Double.isInfinite(d) && new java.math.BigDecimal(d).toBigIntegerExact().equals(v)) return d;
            throw new WireError("the integer " + v + " is not exactly a " + type.getTypeName());
        }
        throw mismatch(raw, type);
    }

    private static List<Object> sequence(Object raw, Type type) throws WireError {
        if (raw instanceof RawTuple) return ((RawTuple) raw).items;
        if (raw instanceof List) {
            @SuppressWarnings("unchecked")
            List<Object> items = (List<Object>) raw;
            return items;
        }
        throw mismatch(raw, type);
    }

    /** A value of no declared type (Object): by its tag. */
    static Object natural(Object raw) throws WireError {
        if (raw == null || raw == UNDEFINED) return null;
        if (raw instanceof BigInteger) {
            BigInteger v = (BigInteger) raw;
            if (v.bitLength() < 32) return v.intValue();
            if (v.bitLength() < 64) return v.longValue();
            return v;
        }
        if (raw instanceof String) return ((String) raw).intern();
        if (raw instanceof RawChar) {
            int code = ((RawChar) raw).code;
            if (code <= 0xFFFF) return (char) code;
            return new String(Character.toChars(code));
        }
        if (raw instanceof RawTuple || raw instanceof List) {
            List<Object> items = new ArrayList<>();
            for (Object item : sequence(raw, Object.class)) items.add(natural(item));
            return items;
        }
        if (raw instanceof RawMap) {
            RawMap m = (RawMap) raw;
            Map<Object, Object> map = new LinkedHashMap<>();
            for (int k = 0; k < m.keys.size(); k++) map.put(natural(m.keys.get(k)), natural(m.values.get(k)));
            return map;
        }
        return raw; // Boolean, Double
    }

    /** Convert a raw tree to a value of {@code type}, or fail with a WireError. */
    static Object convert(Object raw, Type type) throws WireError {
        if (raw == UNDEFINED) raw = null;
        if (type instanceof TypeVariable) {
            // A type parameter (<T extends Comparable<T>>): the value by its tag, within the bound.
            Object value = natural(raw);
            if (value != null && !erase(type).isInstance(value)) throw mismatch(raw, type);
            return value;
        }
        if (type instanceof WildcardType) {
            Type[] upper = ((WildcardType) type).getUpperBounds();
            return convert(raw, upper.length > 0 ? upper[0] : Object.class);
        }
        if (type instanceof GenericArrayType) {
            Type component = ((GenericArrayType) type).getGenericComponentType();
            if (raw == null) return null;
            List<Object> items = sequence(raw, type);
            Object array = Array.newInstance(erase(component), items.size());
            for (int k = 0; k < items.size(); k++) Array.set(array, k, convert(items.get(k), component));
            return array;
        }
        Class<?> cls;
        Type[] params;
        if (type instanceof ParameterizedType) {
            cls = (Class<?>) ((ParameterizedType) type).getRawType();
            params = ((ParameterizedType) type).getActualTypeArguments();
        } else if (type instanceof Class) {
            cls = (Class<?>) type;
            params = null;
        } else {
            throw new WireError("cannot decode into " + type.getTypeName());
        }
        if (cls.isPrimitive()) {
            if (raw == null) throw mismatch(raw, type);
            return primitive(raw, cls, type);
        }
        if (cls == Optional.class) {
            if (raw == null) return Optional.empty();
            return Optional.ofNullable(convert(raw, params != null ? params[0] : Object.class));
        }
        if (cls == OptionalInt.class) {
            return raw == null ? OptionalInt.empty() : OptionalInt.of((Integer) primitive(raw, int.class, type));
        }
        if (cls == OptionalLong.class) {
            return raw == null ? OptionalLong.empty() : OptionalLong.of((Long) primitive(raw, long.class, type));
        }
        if (cls == OptionalDouble.class) {
            return raw == null ? OptionalDouble.empty() : OptionalDouble.of((Double) primitive(raw, double.class, type));
        }
        if (raw == null) return null;
        if (cls == Object.class) return natural(raw);
        if (cls == Integer.class) return primitive(raw, int.class, type);
        if (cls == Long.class) return primitive(raw, long.class, type);
        if (cls == Double.class) return primitive(raw, double.class, type);
        if (cls == Float.class) return primitive(raw, float.class, type);
        if (cls == Short.class) return primitive(raw, short.class, type);
        if (cls == Byte.class) return primitive(raw, byte.class, type);
        if (cls == Boolean.class) return primitive(raw, boolean.class, type);
        if (cls == Character.class) return primitive(raw, char.class, type);
        if (cls == String.class || cls == CharSequence.class) {
            if (!(raw instanceof String)) throw mismatch(raw, type);
            return ((String) raw).intern();
        }
        if (cls == BigInteger.class) {
            if (!(raw instanceof BigInteger)) throw mismatch(raw, type);
            return raw;
        }
        if (cls == Number.class) {
            if (!(raw instanceof BigInteger) && !(raw instanceof Double)) throw mismatch(raw, type);
            return natural(raw);
        }
        if (cls.isArray()) {
            List<Object> items = sequence(raw, type);
            Class<?> component = cls.getComponentType();
            Object array = Array.newInstance(component, items.size());
            for (int k = 0; k < items.size(); k++) Array.set(array, k, convert(items.get(k), component));
            return array;
        }
        if (cls == Map.Entry.class) {
            if (!(raw instanceof RawTuple) || ((RawTuple) raw).items.size() != 2) throw mismatch(raw, type);
            List<Object> items = ((RawTuple) raw).items;
            return new AbstractMap.SimpleEntry<Object, Object>(
                    convert(items.get(0), param(params, 0)), convert(items.get(1), param(params, 1)));
        }
        if (Map.class.isAssignableFrom(cls)) {
            if (!(raw instanceof RawMap)) throw mismatch(raw, type);
            RawMap m = (RawMap) raw;
            @SuppressWarnings("unchecked")
            Map<Object, Object> map = (Map<Object, Object>) instance(cls, type);
            for (int k = 0; k < m.keys.size(); k++) {
                map.put(convert(m.keys.get(k), param(params, 0)), convert(m.values.get(k), param(params, 1)));
            }
            return map;
        }
        if (Iterable.class.isAssignableFrom(cls)) {
            List<Object> items = sequence(raw, type);
            @SuppressWarnings("unchecked")
            Collection<Object> collection = (Collection<Object>) instance(cls, type);
            for (Object item : items) collection.add(convert(item, param(params, 0)));
            return collection;
        }
        throw new WireError("cannot decode into " + type.getTypeName());
    }

    private static Type param(Type[] params, int k) {
        return params != null && params.length > k ? params[k] : Object.class;
    }

    private static Class<?> erase(Type type) {
        if (type instanceof Class) return (Class<?>) type;
        if (type instanceof ParameterizedType) return (Class<?>) ((ParameterizedType) type).getRawType();
        if (type instanceof GenericArrayType) {
            return Array.newInstance(erase(((GenericArrayType) type).getGenericComponentType()), 0).getClass();
        }
        if (type instanceof TypeVariable) {
            Type[] bounds = ((TypeVariable<?>) type).getBounds();
            return bounds.length > 0 ? erase(bounds[0]) : Object.class;
        }
        if (type instanceof WildcardType) return erase(((WildcardType) type).getUpperBounds()[0]);
        return Object.class;
    }

    /** A new empty collection or map for a declared class (an interface gets a standard one). */
    private static Object instance(Class<?> cls, Type type) throws WireError {
        if (cls.isInterface() || Modifier.isAbstract(cls.getModifiers())) {
            if (cls.isAssignableFrom(ArrayList.class)) return new ArrayList<Object>();
            if (cls.isAssignableFrom(LinkedHashSet.class)) return new LinkedHashSet<Object>();
            if (cls.isAssignableFrom(TreeSet.class)) return new TreeSet<Object>();
            if (cls.isAssignableFrom(LinkedList.class)) return new LinkedList<Object>();
            if (cls.isAssignableFrom(ArrayDeque.class)) return new ArrayDeque<Object>();
            if (cls.isAssignableFrom(LinkedHashMap.class)) return new LinkedHashMap<Object, Object>();
            if (cls.isAssignableFrom(TreeMap.class)) return new TreeMap<Object, Object>();
            throw new WireError("cannot decode into " + type.getTypeName());
        }
        try {
            Constructor<?> c = cls.getDeclaredConstructor();
            c.setAccessible(true);
            return c.newInstance();
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new WireError("cannot make a " + type.getTypeName() + ": " + e);
        }
    }

    private static Object primitive(Object raw, Class<?> cls, Type type) throws WireError {
        if (cls == int.class) return (int) integer(raw, type, Integer.MIN_VALUE, Integer.MAX_VALUE);
        if (cls == long.class) return integer(raw, type, Long.MIN_VALUE, Long.MAX_VALUE);
        if (cls == short.class) return (short) integer(raw, type, Short.MIN_VALUE, Short.MAX_VALUE);
        if (cls == byte.class) return (byte) integer(raw, type, Byte.MIN_VALUE, Byte.MAX_VALUE);
        if (cls == double.class) return real(raw, type);
        if (cls == float.class) return (float) real(raw, type);
        if (cls == boolean.class) {
            if (!(raw instanceof Boolean)) throw mismatch(raw, type);
            return raw;
        }
        if (cls == char.class) {
            if (!(raw instanceof RawChar) || ((RawChar) raw).code > 0xFFFF) throw mismatch(raw, type);
            return (char) ((RawChar) raw).code;
        }
        throw mismatch(raw, type); // void
    }

    // ------------------------------------------------------------------ the harness's side

    /** Stop the harness: the call failed, so the test fails, whatever the tests would catch. */
    static void fail(String why) {
        System.out.flush();
        System.err.println("arbiter bridge: " + (why.length() > 2000 ? why.substring(0, 2000) + "..." : why));
        System.err.flush();
        Runtime.getRuntime().halt(FAILED_CALL);
    }

    /**
     * A stub's call: send {@code [name, args]}, return the reply as {@code method}'s generic
     * return type. Never returns on a failed call (see {@link #fail}).
     */
    @SuppressWarnings("unchecked")
    static <R> R call(String name, Method method, Object[] args) {
        byte[] reply;
        try {
            open();
            List<Object> request = new ArrayList<>();
            request.add(name);
            request.add(args);
            writeFrame(out, encode(request));
            reply = readFrame(in);
        } catch (Throwable e) {
            fail("the call of " + name + " failed: " + e);
            return null;
        }
        if (reply == null) {
            fail("the candidate's program ended before it replied to " + name);
            return null;
        }
        try {
            if (reply.length > 0 && reply[0] == 'x') {
                Object message = decode(java.util.Arrays.copyOfRange(reply, 1, reply.length));
                fail(name + " raised: " + message);
                return null;
            }
            if (reply.length == 0 || reply[0] != 'r') throw new WireError("a reply must start with r or x");
            Object raw = decode(java.util.Arrays.copyOfRange(reply, 1, reply.length));
            Type type = method.getGenericReturnType();
            if (type == void.class) {
                if (raw != null && raw != UNDEFINED) throw mismatch(raw, type);
                return null;
            }
            return (R) convert(raw, type);
        } catch (WireError | RuntimeException e) {
            fail("the reply of " + name + " is not a " + method.getGenericReturnType().getTypeName()
                    + ": " + e.getMessage());
            return null;
        }
    }

    // ------------------------------------------------------------------ the candidate's side

    private static Object instance;

    /** Answer calls on descriptor 3 with the methods of the class {@code className}, until it ends. */
    static void serve(String className) {
        try {
            open();
        } catch (Throwable e) {
            System.err.println("arbiter dispatcher: cannot open descriptor 3: " + e);
            System.exit(2);
        }
        while (true) {
            byte[] request;
            try {
                request = readFrame(in);
            } catch (IOException | WireError e) {
                System.err.println("arbiter dispatcher: a bad request: " + e);
                System.exit(2);
                return;
            }
            if (request == null) {
                System.exit(0);
            }
            byte[] reply;
            try {
                reply = answer(className, request);
            } catch (WireError e) {
                reply = failure(e.getMessage());
            }
            try {
                writeFrame(out, reply);
            } catch (IOException e) {
                System.exit(2);
            }
        }
    }

    private static byte[] failure(String message) {
        try {
            byte[] text = encode(message.length() > 4000 ? message.substring(0, 4000) : message);
            byte[] reply = new byte[text.length + 1];
            reply[0] = 'x';
            System.arraycopy(text, 0, reply, 1, text.length);
            return reply;
        } catch (WireError e) {
            return "xs0:".getBytes(StandardCharsets.US_ASCII);
        }
    }

    private static byte[] answer(String className, byte[] request) throws WireError {
        Object raw = decode(request);
        if (!(raw instanceof List) || ((List<?>) raw).size() != 2
                || !(((List<?>) raw).get(0) instanceof String) || !(((List<?>) raw).get(1) instanceof List)) {
            throw new WireError("a request must be [name, args]");
        }
        String name = (String) ((List<?>) raw).get(0);
        List<?> args = (List<?>) ((List<?>) raw).get(1);
        Class<?> cls;
        try {
            cls = Class.forName(className);
        } catch (Throwable e) {
            Throwable cause = e instanceof ExceptionInInitializerError && e.getCause() != null ? e.getCause() : e;
            cause.printStackTrace();
            return failure("class " + className + " cannot be loaded: " + cause);
        }
        List<Method> methods = new ArrayList<>();
        for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == args.size() && !m.isBridge()) {
                    methods.add(m);
                }
            }
        }
        if (methods.isEmpty()) {
            return failure(className + " has no method " + name + " of " + args.size() + " parameters");
        }
        methods.sort((a, b) -> Boolean.compare(!Modifier.isPublic(a.getModifiers()), !Modifier.isPublic(b.getModifiers())));
        Method chosen = null;
        Object[] values = null;
        String why = "";
        for (Method m : methods) {
            Type[] types = m.getGenericParameterTypes();
            Object[] converted = new Object[types.length];
            try {
                for (int k = 0; k < types.length; k++) converted[k] = convert(args.get(k), types[k]);
            } catch (WireError e) {
                why = e.getMessage();
                continue;
            }
            chosen = m;
            values = converted;
            break;
        }
        if (chosen == null) return failure("the arguments do not fit " + name + ": " + why);
        Object result;
        try {
            chosen.setAccessible(true);
            Object target = null;
            if (!Modifier.isStatic(chosen.getModifiers())) {
                if (instance == null || !cls.isInstance(instance)) {
                    Constructor<?> c = cls.getDeclaredConstructor();
                    c.setAccessible(true);
                    instance = c.newInstance();
                }
                target = instance;
            }
            result = chosen.invoke(target, values);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            cause.printStackTrace();
            return failure(cause.toString());
        } catch (Throwable e) {
            Throwable cause = e instanceof ExceptionInInitializerError && e.getCause() != null ? e.getCause() : e;
            cause.printStackTrace();
            return failure(cause.toString());
        }
        try {
            byte[] value = encode(result);
            byte[] reply = new byte[value.length + 1];
            reply[0] = 'r';
            System.arraycopy(value, 0, reply, 1, value.length);
            return reply;
        } catch (WireError | RuntimeException e) {
            return failure("the result of " + name + " cannot be sent: " + e.getMessage());
        }
    }
}
