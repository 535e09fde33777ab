// Arbiter's bridge for Rust: the frames and tagged values of
// arbiter.graders.languages.wire, both directions.
//
// `Encode` writes a value; `Decode` reads one into a declared type, strictly:
// a value of another tag, an integer out of the type's range, a string that
// is not UTF-8, a tuple of another arity, a list or string that runs past the
// frame are errors, never a default. `call` is the harness's side (a stub
// sends one request on descriptor 3 and decodes the reply), `serve` the
// candidate's (the generated dispatcher answers requests until end of stream).
//
// A harness stub treats every failure of the bridge itself (end of stream, a
// malformed frame or value, a reply of another type) as fatal: it reports it
// on stderr and exits the whole test program with status 97, so no test can
// count it as a pass (not even a `#[should_panic]` one). Only an `x` reply
// (the candidate's function panicked) becomes a panic in the calling test.
#![allow(dead_code, unused_imports, unused_mut, unused_variables)]

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::hash::Hash;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::unix::io::FromRawFd;

/// The largest frame either side may send (wire.MAX_FRAME_BYTES).
pub const MAX_FRAME_BYTES: usize = 16 << 20;
const MAX_DEPTH: usize = 200;
const MAX_NUMBER_DIGITS: usize = 100_000;

pub type WireResult<T> = Result<T, String>;

// ---------------------------------------------------------------- reading

/// A cursor over one frame's payload.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0, depth: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn finish(&self) -> WireResult<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(format!("{} bytes after the value", self.remaining()))
        }
    }

    pub fn peek(&self) -> WireResult<u8> {
        match self.data.get(self.pos) {
            Some(b) => Ok(*b),
            None => Err("the value ends early".to_string()),
        }
    }

    pub fn byte(&mut self) -> WireResult<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

    /// Read one tag byte, which must be `want`.
    pub fn expect(&mut self, want: u8, what: &str) -> WireResult<()> {
        let at = self.pos;
        let got = self.byte()?;
        if got == want {
            Ok(())
        } else {
            Err(format!("expected {} ({}), got tag {:?} at byte {}", what, want as char, got as char, at))
        }
    }

    /// A decimal number's text up to `stop` (an optional minus sign, then digits).
    pub fn number_text(&mut self, stop: u8) -> WireResult<&'a str> {
        let start = self.pos;
        let rest = &self.data[start..];
        let end = match rest.iter().take(MAX_NUMBER_DIGITS + 2).position(|b| *b == stop) {
            Some(n) => n,
            None => return Err(format!("unterminated number at byte {}", start)),
        };
        let text = &rest[..end];
        let digits = if text.first() == Some(&b'-') { &text[1..] } else { text };
        if digits.is_empty() || !digits.iter().all(|b| b.is_ascii_digit()) {
            return Err(format!("not a decimal number at byte {}", start));
        }
        self.pos = start + end + 1;
        Ok(std::str::from_utf8(text).unwrap())
    }

    /// A count or length (a non-negative number that fits the frame).
    pub fn count(&mut self, stop: u8) -> WireResult<usize> {
        let text = self.number_text(stop)?;
        let n: usize = text
            .parse()
            .map_err(|_| format!("a count of {} cannot fit the frame", text))?;
        if n > self.data.len() {
            return Err(format!("a count of {} cannot fit the frame", n));
        }
        Ok(n)
    }

    /// The header of a sequence-like value: its tag (`l`, `t` or `m`) and count.
    pub fn seq(&mut self, tag: u8, what: &str) -> WireResult<usize> {
        self.expect(tag, what)?;
        self.count(b':')
    }

    /// The raw bytes of a string value (after its `s` tag).
    pub fn string_bytes(&mut self) -> WireResult<&'a [u8]> {
        let size = self.count(b':')?;
        if size > self.remaining() {
            return Err("a string runs past the frame".to_string());
        }
        let out = &self.data[self.pos..self.pos + size];
        self.pos += size;
        Ok(out)
    }

    /// A string value, whole (tag included).
    pub fn string(&mut self) -> WireResult<String> {
        self.expect(b's', "a string")?;
        let raw = self.string_bytes()?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err("a string that is not UTF-8".to_string()),
        }
    }

    pub fn enter(&mut self) -> WireResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err("values nested too deep".to_string())
        } else {
            Ok(())
        }
    }

    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skip one well-formed value of any tag.
    pub fn skip(&mut self) -> WireResult<()> {
        let _ = decode_any(self)?;
        Ok(())
    }
}

// ---------------------------------------------------------------- the traits

/// A value the bridge can send.
pub trait Encode {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()>;
}

/// A value the bridge can receive, into exactly this type.
pub trait Decode: Sized {
    fn decode(r: &mut Reader) -> WireResult<Self>;
}

/// Decode a whole payload as one value of type `T`.
pub fn decode_all<T: Decode>(data: &[u8]) -> WireResult<T> {
    let mut r = Reader::new(data);
    let v = T::decode(&mut r)?;
    r.finish()?;
    Ok(v)
}

/// Encode one value into a fresh buffer.
pub fn encode_value<T: Encode + ?Sized>(v: &T) -> WireResult<Vec<u8>> {
    let mut out = Vec::new();
    v.encode(&mut out)?;
    Ok(out)
}

fn put(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
}

// ---------------------------------------------------------------- scalars

impl Encode for () {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        out.push(b'n');
        Ok(())
    }
}

impl Decode for () {
    fn decode(r: &mut Reader) -> WireResult<()> {
        match r.byte()? {
            b'n' | b'u' => Ok(()),
            t => Err(format!("expected null for (), got tag {:?}", t as char)),
        }
    }
}

impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        put(out, if *self { "b1" } else { "b0" });
        Ok(())
    }
}

impl Decode for bool {
    fn decode(r: &mut Reader) -> WireResult<bool> {
        r.expect(b'b', "a bool")?;
        match r.byte()? {
            b'1' => Ok(true),
            b'0' => Ok(false),
            _ => Err("a bool must be b0 or b1".to_string()),
        }
    }
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
                put(out, &format!("i{};", self));
                Ok(())
            }
        }
        impl Decode for $t {
            fn decode(r: &mut Reader) -> WireResult<$t> {
                r.expect(b'i', "an integer")?;
                let text = r.number_text(b';')?;
                // "-0" is 0; a leading zero or a minus sign is read as Python reads it.
                let (neg, digits) = match text.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, text),
                };
                let digits = digits.trim_start_matches('0');
                let digits = if digits.is_empty() { "0" } else { digits };
                let canon = if neg && digits != "0" { format!("-{}", digits) } else { digits.to_string() };
                canon.parse::<$t>().map_err(|_| {
                    format!("the integer {} does not fit {}", text, stringify!($t))
                })
            }
        }
    )*};
}
wire_int!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl Encode for f64 {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        put(out, &format!("f{:016x}", self.to_bits()));
        Ok(())
    }
}

impl Encode for f32 {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        (*self as f64).encode(out)
    }
}

fn float_bits(r: &mut Reader) -> WireResult<f64> {
    r.expect(b'f', "a float")?;
    let start = r.pos;
    if r.remaining() < 16 {
        return Err(format!("a float needs 16 hex digits, at byte {}", start));
    }
    let hex = &r.data[start..start + 16];
    if !hex.iter().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("bad float bits at byte {}", start));
    }
    r.pos += 16;
    let bits = u64::from_str_radix(std::str::from_utf8(hex).unwrap(), 16)
        .map_err(|_| format!("bad float bits at byte {}", start))?;
    Ok(f64::from_bits(bits))
}

impl Decode for f64 {
    fn decode(r: &mut Reader) -> WireResult<f64> {
        float_bits(r)
    }
}

impl Decode for f32 {
    fn decode(r: &mut Reader) -> WireResult<f32> {
        Ok(float_bits(r)? as f32)
    }
}

impl Encode for char {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        put(out, &format!("c{};", *self as u32));
        Ok(())
    }
}

impl Decode for char {
    fn decode(r: &mut Reader) -> WireResult<char> {
        r.expect(b'c', "a character")?;
        let text = r.number_text(b';')?;
        let code: u32 = text.parse().map_err(|_| format!("no character has code {}", text))?;
        char::from_u32(code).ok_or_else(|| format!("no Rust char has code {}", code))
    }
}

impl Encode for str {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        put(out, &format!("s{}:", self.len()));
        out.extend_from_slice(self.as_bytes());
        Ok(())
    }
}

impl Encode for String {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        self.as_str().encode(out)
    }
}

impl Decode for String {
    fn decode(r: &mut Reader) -> WireResult<String> {
        r.string()
    }
}

// ---------------------------------------------------------------- references and boxes

impl<'a, T: Encode + ?Sized> Encode for &'a T {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        (**self).encode(out)
    }
}

impl<'a, T: Encode + ?Sized> Encode for &'a mut T {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        (**self).encode(out)
    }
}

impl<T: Encode + ?Sized> Encode for Box<T> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        (**self).encode(out)
    }
}

impl<T: Decode> Decode for Box<T> {
    fn decode(r: &mut Reader) -> WireResult<Box<T>> {
        Ok(Box::new(T::decode(r)?))
    }
}

// A returned reference (the harness's stub returns what the declaration says):
// the decoded value is leaked, which a test program can afford.
impl<'a> Decode for &'a str {
    fn decode(r: &mut Reader) -> WireResult<&'a str> {
        Ok(Box::leak(String::decode(r)?.into_boxed_str()))
    }
}

impl<'a, T: Decode + 'a> Decode for &'a [T] {
    fn decode(r: &mut Reader) -> WireResult<&'a [T]> {
        Ok(Box::leak(Vec::<T>::decode(r)?.into_boxed_slice()))
    }
}

impl<'a, T: Decode + 'a> Decode for &'a T {
    fn decode(r: &mut Reader) -> WireResult<&'a T> {
        Ok(Box::leak(Box::new(T::decode(r)?)))
    }
}

// ---------------------------------------------------------------- sequences

fn encode_items<'b, T: Encode + 'b, I: ExactSizeIterator<Item = &'b T>>(
    tag: char,
    items: I,
    out: &mut Vec<u8>,
) -> WireResult<()> {
    put(out, &format!("{}{}:", tag, items.len()));
    for item in items {
        item.encode(out)?;
    }
    Ok(())
}

fn decode_items<T: Decode>(r: &mut Reader) -> WireResult<Vec<T>> {
    let n = r.seq(b'l', "a list")?;
    r.enter()?;
    let mut out = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        out.push(T::decode(r)?);
    }
    r.leave();
    Ok(out)
}

impl<T: Encode> Encode for [T] {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('l', self.iter(), out)
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('l', self.iter(), out)
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(r: &mut Reader) -> WireResult<Vec<T>> {
        decode_items(r)
    }
}

impl<T: Encode, const N: usize> Encode for [T; N] {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('l', self.iter(), out)
    }
}

impl<T: Decode, const N: usize> Decode for [T; N] {
    fn decode(r: &mut Reader) -> WireResult<[T; N]> {
        let items: Vec<T> = decode_items(r)?;
        let n = items.len();
        items
            .try_into()
            .map_err(|_| format!("a list of {} items for an array of {}", n, N))
    }
}

impl<T: Encode> Encode for VecDeque<T> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('l', self.iter(), out)
    }
}

impl<T: Decode> Decode for VecDeque<T> {
    fn decode(r: &mut Reader) -> WireResult<VecDeque<T>> {
        Ok(decode_items(r)?.into())
    }
}

impl<T: Encode> Encode for HashSet<T> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('l', self.iter(), out)
    }
}

impl<T: Decode + Eq + Hash> Decode for HashSet<T> {
    fn decode(r: &mut Reader) -> WireResult<HashSet<T>> {
        Ok(decode_items(r)?.into_iter().collect())
    }
}

impl<T: Encode> Encode for BTreeSet<T> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('l', self.iter(), out)
    }
}

impl<T: Decode + Ord> Decode for BTreeSet<T> {
    fn decode(r: &mut Reader) -> WireResult<BTreeSet<T>> {
        Ok(decode_items(r)?.into_iter().collect())
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        match self {
            None => {
                out.push(b'n');
                Ok(())
            }
            Some(v) => v.encode(out),
        }
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(r: &mut Reader) -> WireResult<Option<T>> {
        match r.peek()? {
            b'n' | b'u' => {
                r.pos += 1;
                Ok(None)
            }
            _ => Ok(Some(T::decode(r)?)),
        }
    }
}

// ---------------------------------------------------------------- maps

fn encode_pairs<'b, K: Encode + 'b, V: Encode + 'b, I: ExactSizeIterator<Item = (&'b K, &'b V)>>(
    items: I,
    out: &mut Vec<u8>,
) -> WireResult<()> {
    put(out, &format!("m{}:", items.len()));
    for (k, v) in items {
        k.encode(out)?;
        v.encode(out)?;
    }
    Ok(())
}

// A later key replaces an earlier equal one, as the reference decoder does.
fn decode_pairs<K: Decode, V: Decode>(r: &mut Reader) -> WireResult<Vec<(K, V)>> {
    let n = r.seq(b'm', "a map")?;
    r.enter()?;
    let mut out = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let k = K::decode(r)?;
        let v = V::decode(r)?;
        out.push((k, v));
    }
    r.leave();
    Ok(out)
}

impl<K: Encode, V: Encode, S> Encode for HashMap<K, V, S> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_pairs(self.iter(), out)
    }
}

impl<K: Decode + Eq + Hash, V: Decode> Decode for HashMap<K, V> {
    fn decode(r: &mut Reader) -> WireResult<HashMap<K, V>> {
        Ok(decode_pairs(r)?.into_iter().collect())
    }
}

impl<K: Encode, V: Encode> Encode for BTreeMap<K, V> {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_pairs(self.iter(), out)
    }
}

impl<K: Decode + Ord, V: Decode> Decode for BTreeMap<K, V> {
    fn decode(r: &mut Reader) -> WireResult<BTreeMap<K, V>> {
        Ok(decode_pairs(r)?.into_iter().collect())
    }
}

// ---------------------------------------------------------------- tuples

macro_rules! wire_tuple {
    ($n:expr; $($name:ident $idx:tt),+) => {
        impl<$($name: Encode),+> Encode for ($($name,)+) {
            fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
                put(out, &format!("t{}:", $n));
                $(self.$idx.encode(out)?;)+
                Ok(())
            }
        }
        impl<$($name: Decode),+> Decode for ($($name,)+) {
            fn decode(r: &mut Reader) -> WireResult<($($name,)+)> {
                let n = r.seq(b't', "a tuple")?;
                if n != $n {
                    return Err(format!("a tuple of {} items for one of {}", n, $n));
                }
                r.enter()?;
                let v = ($($name::decode(r)?,)+);
                r.leave();
                Ok(v)
            }
        }
    };
}
wire_tuple!(1; A 0);
wire_tuple!(2; A 0, B 1);
wire_tuple!(3; A 0, B 1, C 2);
wire_tuple!(4; A 0, B 1, C 2, D 3);
wire_tuple!(5; A 0, B 1, C 2, D 3, E 4);
wire_tuple!(6; A 0, B 1, C 2, D 3, E 4, F 5);
wire_tuple!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
wire_tuple!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
wire_tuple!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
wire_tuple!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
wire_tuple!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
wire_tuple!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

// ---------------------------------------------------------------- dynamic values

/// A tuple read into a `dyn Any` (`t`): its items, kept apart from a list.
pub struct AnyTuple(pub Vec<Box<dyn Any>>);

/// A map read into a `dyn Any` (`m`): its pairs, in the order sent.
pub struct AnyMap(pub Vec<(Box<dyn Any>, Box<dyn Any>)>);

impl Encode for AnyTuple {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        encode_items('t', self.0.iter(), out)
    }
}

impl Encode for AnyMap {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        put(out, &format!("m{}:", self.0.len()));
        for (k, v) in &self.0 {
            k.encode(out)?;
            v.encode(out)?;
        }
        Ok(())
    }
}

/// Read any value by its tag: `i` into i32 (i64, i128, u128 when larger), `f`
/// into f64, `c` char, `s` String, `b` bool, `n`/`u` (), `l` Vec<Box<dyn Any>>,
/// `t` AnyTuple, `m` AnyMap.
pub fn decode_any(r: &mut Reader) -> WireResult<Box<dyn Any>> {
    match r.peek()? {
        b'n' | b'u' => {
            r.pos += 1;
            Ok(Box::new(()))
        }
        b'b' => Ok(Box::new(bool::decode(r)?)),
        b'i' => {
            let start = r.pos;
            if let Ok(v) = i32::decode(r) {
                return Ok(Box::new(v));
            }
            r.pos = start;
            if let Ok(v) = i64::decode(r) {
                return Ok(Box::new(v));
            }
            r.pos = start;
            if let Ok(v) = i128::decode(r) {
                return Ok(Box::new(v));
            }
            r.pos = start;
            Ok(Box::new(u128::decode(r)?))
        }
        b'f' => Ok(Box::new(f64::decode(r)?)),
        b'c' => Ok(Box::new(char::decode(r)?)),
        b's' => Ok(Box::new(String::decode(r)?)),
        b'l' | b't' => {
            let tag = r.byte()?;
            let n = r.count(b':')?;
            r.enter()?;
            let mut out: Vec<Box<dyn Any>> = Vec::with_capacity(n.min(4096));
            for _ in 0..n {
                out.push(decode_any(r)?);
            }
            r.leave();
            if tag == b't' {
                Ok(Box::new(AnyTuple(out)))
            } else {
                Ok(Box::new(out))
            }
        }
        b'm' => {
            r.pos += 1;
            let n = r.count(b':')?;
            r.enter()?;
            let mut out: Vec<(Box<dyn Any>, Box<dyn Any>)> = Vec::with_capacity(n.min(4096));
            for _ in 0..n {
                let k = decode_any(r)?;
                let v = decode_any(r)?;
                out.push((k, v));
            }
            r.leave();
            Ok(Box::new(AnyMap(out)))
        }
        t => Err(format!("unknown tag {:?} at byte {}", t as char, r.pos)),
    }
}

impl Decode for Box<dyn Any> {
    fn decode(r: &mut Reader) -> WireResult<Box<dyn Any>> {
        decode_any(r)
    }
}

// Encode what a `dyn Any` holds, for the types a test is likely to box.
macro_rules! any_as {
    ($v:expr, $out:expr; $($t:ty),*) => {
        $(if let Some(x) = $v.downcast_ref::<$t>() {
            return x.encode($out);
        })*
    };
}

impl Encode for dyn Any {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        any_as!(self, out; i32, i64, f64, f32, bool, char, String, &'static str, (),
            i8, i16, i128, isize, u8, u16, u32, u64, u128, usize,
            Box<dyn Any>, Vec<Box<dyn Any>>, Vec<i32>, Vec<i64>, Vec<f64>, Vec<f32>,
            Vec<String>, Vec<&'static str>, Vec<bool>, Vec<char>, Vec<usize>, Vec<u32>, Vec<u64>,
            Vec<Vec<i32>>, Vec<Vec<String>>, AnyTuple, AnyMap,
            Option<i32>, Option<i64>, Option<f64>, Option<String>, Option<&'static str>,
            HashMap<String, i32>, HashMap<&'static str, i32>, HashMap<String, String>,
            HashMap<&'static str, &'static str>, HashMap<char, i32>);
        Err("a dyn Any of a type the bridge does not know".to_string())
    }
}

impl Encode for dyn Any + Send {
    fn encode(&self, out: &mut Vec<u8>) -> WireResult<()> {
        let me: &dyn Any = self;
        me.encode(out)
    }
}

// ---------------------------------------------------------------- frames on descriptor 3

fn channel() -> ManuallyDrop<File> {
    // Descriptor 3 is the bridge; it is never closed here.
    ManuallyDrop::new(unsafe { File::from_raw_fd(3) })
}

/// Read one frame; `Ok(None)` at a clean end of stream.
pub fn read_frame<R: Read>(src: &mut R) -> WireResult<Option<Vec<u8>>> {
    let mut head: Vec<u8> = Vec::new();
    loop {
        let mut b = [0u8; 1];
        let n = loop {
            match src.read(&mut b) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading the bridge: {}", e)),
            }
        };
        if n == 0 {
            if head.is_empty() {
                return Ok(None);
            }
            return Err("the stream ended inside a frame's length".to_string());
        }
        if b[0] == b':' {
            break;
        }
        if !b[0].is_ascii_digit() || head.len() > 12 {
            return Err("a frame's length must be decimal digits".to_string());
        }
        head.push(b[0]);
    }
    if head.is_empty() {
        return Err("a frame's length is empty".to_string());
    }
    let size: usize = std::str::from_utf8(&head).unwrap().parse().map_err(|_| "bad frame length".to_string())?;
    if size > MAX_FRAME_BYTES {
        return Err(format!("a frame of {} bytes is over the limit of {}", size, MAX_FRAME_BYTES));
    }
    let mut payload = vec![0u8; size];
    src.read_exact(&mut payload)
        .map_err(|_| "the stream ended inside a frame".to_string())?;
    Ok(Some(payload))
}

/// Write one frame.
pub fn write_frame<W: Write>(dst: &mut W, payload: &[u8]) -> WireResult<()> {
    let mut data = format!("{}:", payload.len()).into_bytes();
    data.extend_from_slice(payload);
    dst.write_all(&data).map_err(|e| format!("writing the bridge: {}", e))?;
    dst.flush().map_err(|e| format!("writing the bridge: {}", e))
}

// ---------------------------------------------------------------- the harness's side

/// A failure of the bridge itself: no test may pass on it, so the test program ends here.
pub fn fail(msg: &str) -> ! {
    // Written straight to descriptor 2: the test runner's capture would lose it at exit.
    let _ = std::io::stderr().write_all(format!("arbiter bridge: {}\n", msg).as_bytes());
    let _ = std::io::stdout().flush();
    std::process::exit(97)
}

/// Encode one argument of a call (a stub's).
pub fn arg<T: Encode + ?Sized>(v: &T, out: &mut Vec<u8>) {
    if let Err(e) = v.encode(out) {
        fail(&format!("cannot send an argument: {}", e));
    }
}

/// One call in flight at a time, even from a test's own threads.
static CALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Send one call (`args` holds `count` encoded values) and decode its reply as `R`.
pub fn call<R: Decode>(name: &str, count: usize, args: Vec<u8>) -> R {
    let reply = {
        let _one = CALLING.lock().unwrap_or_else(|e| e.into_inner());
        exchange(name, count, args)
    };
    match reply.first() {
        Some(b'r') => match decode_all::<R>(&reply[1..]) {
            Ok(v) => v,
            Err(e) => fail(&format!("the reply of {} does not fit its return type: {}", name, e)),
        },
        Some(b'x') => match decode_all::<String>(&reply[1..]) {
            Ok(msg) => panic!("{} panicked in the candidate's program: {}", name, msg),
            Err(e) => fail(&format!("a malformed error reply from {}: {}", name, e)),
        },
        _ => fail(&format!("a malformed reply from {}", name)),
    }
}

fn exchange(name: &str, count: usize, args: Vec<u8>) -> Vec<u8> {
    let mut payload = Vec::with_capacity(args.len() + name.len() + 16);
    put(&mut payload, "l2:");
    let _ = name.encode(&mut payload);
    put(&mut payload, &format!("l{}:", count));
    payload.extend_from_slice(&args);
    if payload.len() > MAX_FRAME_BYTES {
        fail("a request over the frame limit");
    }
    let mut ch = channel();
    if let Err(e) = write_frame(&mut *ch, &payload) {
        fail(&format!("calling {}: {}", name, e));
    }
    match read_frame(&mut *ch) {
        Ok(Some(p)) => p,
        Ok(None) => fail(&format!("calling {}: the candidate's program closed the bridge", name)),
        Err(e) => fail(&format!("calling {}: {}", name, e)),
    }
}

// ---------------------------------------------------------------- the candidate's side

/// A generated dispatcher: runs the named function on the arguments read from
/// `args` (`count` of them) and returns its encoded result.
pub type Dispatch = fn(&str, &mut Reader, usize) -> WireResult<Vec<u8>>;

/// Encode a function's result (a dispatcher's).
pub fn result<T: Encode + ?Sized>(v: &T) -> WireResult<Vec<u8>> {
    encode_value(v)
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}

fn answer(dispatch: Dispatch, payload: &[u8]) -> Vec<u8> {
    let mut r = Reader::new(payload);
    let head = (|| -> WireResult<(String, usize)> {
        let n = r.seq(b'l', "a request")?;
        if n != 2 {
            return Err("a request is a list of two".to_string());
        }
        let name = r.string()?;
        let count = r.seq(b'l', "the arguments")?;
        Ok((name, count))
    })();
    let outcome = match head {
        Err(e) => Err(format!("a malformed request: {}", e)),
        Ok((name, count)) => {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let v = dispatch(&name, &mut r, count)?;
                Ok(v)
            }));
            match run {
                Ok(Ok(v)) => match r.finish() {
                    Ok(()) => Ok(v),
                    Err(e) => Err(format!("a malformed request: {}", e)),
                },
                Ok(Err(e)) => Err(e),
                Err(p) => Err(panic_message(&*p)),
            }
        }
    };
    let mut reply = Vec::new();
    match outcome {
        Ok(v) => {
            reply.push(b'r');
            reply.extend_from_slice(&v);
        }
        Err(msg) => {
            reply.push(b'x');
            let _ = msg.encode(&mut reply);
        }
    }
    if reply.len() > MAX_FRAME_BYTES {
        reply = vec![b'x'];
        let _ = "the result is over the frame limit".encode(&mut reply);
    }
    reply
}

/// Answer calls on descriptor 3 until the harness closes it.
pub fn serve(dispatch: Dispatch) {
    let mut ch = channel();
    loop {
        let payload = match read_frame(&mut *ch) {
            Ok(Some(p)) => p,
            Ok(None) => std::process::exit(0),
            Err(e) => {
                let _ = std::io::stderr().write_all(format!("arbiter bridge: {}\n", e).as_bytes());
                std::process::exit(2);
            }
        };
        let reply = answer(dispatch, &payload);
        if write_frame(&mut *ch, &reply).is_err() {
            std::process::exit(2);
        }
    }
}
