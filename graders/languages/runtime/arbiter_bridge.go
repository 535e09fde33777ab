// Package arbiterbridge is Arbiter's bridge for Go: the wire format of
// arbiter/graders/languages/wire.py (frames of tagged values) over descriptor 3,
// with Call for the harness's stubs and Serve for the candidate's dispatcher.
//
// Values are encoded by their static Go type (reflect): bool (b), every integer
// kind (i; an int32, Go's rune, as c when it is a code point), float32/float64 (f,
// a float32 widened), string (s, its bytes as they are), slices and arrays (l),
// maps (m), structs with exported fields (t), pointers (n or the pointee), error
// (n or its message as s). A nil slice, map, pointer or interface is n, so nil and
// empty stay apart as Go's assert.Equal keeps them apart.
//
// An interface{} is decoded by tag: i to int, f to float64, s to string, b to bool,
// c to rune, n to nil; l to []T when every element decoded to the same type T, else
// to []interface{}; m to map[K]V likewise (K and V each the common type, else
// interface{}). A value inside an interface{} is only sent when that decoding gives
// it back as the same Go type (an int64 or a []interface{}{1, 2} would come back as
// an int or a []int): otherwise the send fails, never a silent change of type.
package arbiterbridge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
)

// MaxFrameBytes is the largest frame either side accepts (wire.MAX_FRAME_BYTES).
const MaxFrameBytes = 16 << 20

// addressSpaceReserveMB must equal GoLanguage.limits.address_space_mb: a run's
// RLIMIT_AS is the task's memory plus it, so the heap's soft limit is the rest.
const addressSpaceReserveMB = 1024

const maxDepth = 200

func init() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) != nil || lim.Cur >= 1<<50 {
		return
	}
	if heap := int64(lim.Cur) - addressSpaceReserveMB<<20; heap > 0 {
		debug.SetMemoryLimit(heap)
	}
}

// ---------------------------------------------------------------- parsing

// node is one parsed value: its tag and its contents.
type node struct {
	tag  byte
	num  string // i, c: the decimal text
	bits uint64 // f
	flag bool   // b
	str  string // s
	kids []node // l, t: the items; m: key, value, key, value...
}

func parseAll(data []byte) (node, error) {
	n, end, err := parse(data, 0, 0)
	if err != nil {
		return n, err
	}
	if end != len(data) {
		return n, fmt.Errorf("%d bytes after the value", len(data)-end)
	}
	return n, nil
}

func number(data []byte, pos int, stop byte) (string, int, error) {
	end := pos
	for end < len(data) && data[end] != stop {
		end++
		if end-pos > 100000 {
			break
		}
	}
	if end >= len(data) || end-pos > 100000 {
		return "", 0, fmt.Errorf("unterminated number at byte %d", pos)
	}
	text := string(data[pos:end])
	digits := text
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return "", 0, fmt.Errorf("not a decimal number at byte %d", pos)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", 0, fmt.Errorf("not a decimal number at byte %d", pos)
		}
	}
	return text, end + 1, nil
}

func count(data []byte, pos int) (int, int, error) {
	text, pos, err := number(data, pos, ':')
	if err != nil {
		return 0, 0, err
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 || n > len(data) {
		return 0, 0, fmt.Errorf("a count of %s cannot fit the frame", text)
	}
	return n, pos, nil
}

func parse(data []byte, pos, depth int) (node, int, error) {
	var n node
	if depth > maxDepth {
		return n, 0, errors.New("values nested too deep")
	}
	if pos >= len(data) {
		return n, 0, errors.New("the value ends early")
	}
	n.tag = data[pos]
	pos++
	switch n.tag {
	case 'n', 'u':
		return n, pos, nil
	case 'b':
		if pos >= len(data) || (data[pos] != '0' && data[pos] != '1') {
			return n, 0, fmt.Errorf("a bool must be b0 or b1, at byte %d", pos)
		}
		n.flag = data[pos] == '1'
		return n, pos + 1, nil
	case 'i', 'c':
		text, end, err := number(data, pos, ';')
		if err != nil {
			return n, 0, err
		}
		n.num = text
		if n.tag == 'c' {
			code, err := strconv.ParseInt(text, 10, 64)
			if err != nil || code < 0 || code > 0x10FFFF {
				return n, 0, fmt.Errorf("no character has code %s", text)
			}
		}
		return n, end, nil
	case 'f':
		if pos+16 > len(data) {
			return n, 0, fmt.Errorf("a float needs 16 hex digits, at byte %d", pos)
		}
		bits, err := strconv.ParseUint(string(data[pos:pos+16]), 16, 64)
		if err != nil {
			return n, 0, fmt.Errorf("bad float bits at byte %d", pos)
		}
		n.bits = bits
		return n, pos + 16, nil
	case 's':
		text, end, err := number(data, pos, ':')
		if err != nil {
			return n, 0, err
		}
		size, err := strconv.Atoi(text)
		if err != nil || size < 0 || end+size > len(data) {
			return n, 0, errors.New("a string runs past the frame")
		}
		n.str = string(data[end : end+size])
		return n, end + size, nil
	case 'l', 't', 'm':
		items, end, err := count(data, pos)
		if err != nil {
			return n, 0, err
		}
		if n.tag == 'm' {
			items *= 2
		}
		pos = end
		n.kids = make([]node, 0, min(items, 1024))
		for i := 0; i < items; i++ {
			kid, end, err := parse(data, pos, depth+1)
			if err != nil {
				return n, 0, err
			}
			n.kids = append(n.kids, kid)
			pos = end
		}
		return n, pos, nil
	}
	return n, 0, fmt.Errorf("unknown tag %q at byte %d", n.tag, pos-1)
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// ---------------------------------------------------------------- encoding

var (
	errorType = reflect.TypeOf((*error)(nil)).Elem()
	anyType   = reflect.TypeOf((*interface{})(nil)).Elem()
	boolType  = reflect.TypeOf(false)
	intType   = reflect.TypeOf(0)
	runeType  = reflect.TypeOf(rune(0))
	floatType = reflect.TypeOf(0.0)
	strType   = reflect.TypeOf("")
	anySlice  = reflect.TypeOf([]interface{}{})
	anyMap    = reflect.TypeOf(map[interface{}]interface{}{})
)

func isRune(x int64) bool { return x >= 0 && x <= 0x10FFFF }

func appendString(b []byte, s string) []byte {
	b = append(b, 's')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// encode appends v by its static type; inside is true within a value already
// checked to cross an interface{} as itself.
func encode(b []byte, v reflect.Value, inside bool, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errors.New("values nested too deep")
	}
	t := v.Type()
	if t == errorType {
		if v.IsNil() {
			return append(b, 'n'), nil
		}
		return appendString(b, v.Interface().(error).Error()), nil
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 'b', '1'), nil
		}
		return append(b, 'b', '0'), nil
	case reflect.Int32:
		if isRune(v.Int()) {
			b = append(b, 'c')
			b = strconv.AppendInt(b, v.Int(), 10)
			return append(b, ';'), nil
		}
		fallthrough
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int64:
		b = append(b, 'i')
		b = strconv.AppendInt(b, v.Int(), 10)
		return append(b, ';'), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b = append(b, 'i')
		b = strconv.AppendUint(b, v.Uint(), 10)
		return append(b, ';'), nil
	case reflect.Float32, reflect.Float64:
		b = append(b, 'f')
		bits := strconv.FormatUint(math.Float64bits(v.Float()), 16)
		for i := len(bits); i < 16; i++ {
			b = append(b, '0')
		}
		return append(b, bits...), nil
	case reflect.String:
		return appendString(b, v.String()), nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, 'n'), nil
		}
		b = append(b, 'l')
		b = strconv.AppendInt(b, int64(v.Len()), 10)
		b = append(b, ':')
		for i := 0; i < v.Len(); i++ {
			var err error
			if b, err = encode(b, v.Index(i), inside, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	case reflect.Map:
		if v.IsNil() {
			return append(b, 'n'), nil
		}
		b = append(b, 'm')
		b = strconv.AppendInt(b, int64(v.Len()), 10)
		b = append(b, ':')
		it := v.MapRange()
		for it.Next() {
			var err error
			if b, err = encode(b, it.Key(), inside, depth+1); err != nil {
				return b, err
			}
			if b, err = encode(b, it.Value(), inside, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	case reflect.Ptr:
		if v.IsNil() {
			return append(b, 'n'), nil
		}
		return encode(b, v.Elem(), inside, depth+1)
	case reflect.Interface:
		if v.IsNil() {
			return append(b, 'n'), nil
		}
		if v.NumMethod() != 0 {
			return b, fmt.Errorf("a %s cannot cross the bridge", t)
		}
		if !inside && !faithful(v.Elem(), 0) {
			return b, fmt.Errorf("a %s inside an interface{} would not come back as itself", v.Elem().Type())
		}
		return encode(b, v.Elem(), true, depth+1)
	case reflect.Struct:
		b = append(b, 't')
		b = strconv.AppendInt(b, int64(v.NumField()), 10)
		b = append(b, ':')
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).PkgPath != "" {
				return b, fmt.Errorf("a %s has an unexported field", t)
			}
			var err error
			if b, err = encode(b, v.Field(i), inside, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, fmt.Errorf("a %s cannot cross the bridge", t)
}

// faithful reports whether v (a concrete value, or the zero Value for nil), sent
// inside an interface{}, decodes back to the same Go type all the way down.
func faithful(v reflect.Value, depth int) bool {
	if !v.IsValid() {
		return true
	}
	if depth > maxDepth {
		return false
	}
	t := v.Type()
	switch t {
	case boolType, intType, floatType, strType:
		return true
	case runeType:
		return isRune(v.Int())
	}
	dynamic := func(e reflect.Value) (reflect.Type, bool) {
		if e.Kind() == reflect.Interface {
			e = e.Elem()
		}
		if !e.IsValid() {
			return nil, true
		}
		return e.Type(), faithful(e, depth+1)
	}
	switch t.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return false
		}
		var types []reflect.Type
		for i := 0; i < v.Len(); i++ {
			et, ok := dynamic(v.Index(i))
			if !ok {
				return false
			}
			types = append(types, et)
		}
		if common := commonType(types); common != nil {
			return t == reflect.SliceOf(common)
		}
		return t == anySlice
	case reflect.Map:
		if v.IsNil() {
			return false
		}
		var keys, vals []reflect.Type
		it := v.MapRange()
		for it.Next() {
			kt, ok := dynamic(it.Key())
			if !ok {
				return false
			}
			vt, ok := dynamic(it.Value())
			if !ok {
				return false
			}
			keys, vals = append(keys, kt), append(vals, vt)
		}
		return t == mapType(commonType(keys), commonType(vals))
	}
	return false
}

// commonType is the one type of every item, or nil (none, a nil, or mixed types).
func commonType(types []reflect.Type) reflect.Type {
	if len(types) == 0 || types[0] == nil {
		return nil
	}
	for _, t := range types[1:] {
		if t != types[0] {
			return nil
		}
	}
	return types[0]
}

func mapType(key, val reflect.Type) reflect.Type {
	if key == nil || !key.Comparable() {
		key = anyType
	}
	if val == nil {
		val = anyType
	}
	return reflect.MapOf(key, val)
}

// ---------------------------------------------------------------- decoding

// assign decodes n into the settable v, by v's type.
func assign(n *node, v reflect.Value, depth int) error {
	if depth > maxDepth {
		return errors.New("values nested too deep")
	}
	t := v.Type()
	mismatch := func() error { return fmt.Errorf("a %q value cannot be a %s", n.tag, t) }
	if t == errorType {
		switch n.tag {
		case 'n':
			v.Set(reflect.Zero(t))
			return nil
		case 's':
			v.Set(reflect.ValueOf(errors.New(n.str)))
			return nil
		}
		return mismatch()
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return fmt.Errorf("a %s cannot cross the bridge", t)
		}
		d, err := dynamic(n, depth)
		if err != nil {
			return err
		}
		if d.IsValid() {
			v.Set(d)
		} else {
			v.Set(reflect.Zero(t))
		}
		return nil
	case reflect.Bool:
		if n.tag != 'b' {
			return mismatch()
		}
		v.SetBool(n.flag)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.tag != 'i' && !(n.tag == 'c' && v.Kind() == reflect.Int32) {
			return mismatch()
		}
		x, err := strconv.ParseInt(n.num, 10, 64)
		if err != nil || v.OverflowInt(x) {
			return fmt.Errorf("%s does not fit a %s", n.num, t)
		}
		v.SetInt(x)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n.tag != 'i' {
			return mismatch()
		}
		x, err := strconv.ParseUint(n.num, 10, 64)
		if err != nil || v.OverflowUint(x) {
			return fmt.Errorf("%s does not fit a %s", n.num, t)
		}
		v.SetUint(x)
		return nil
	case reflect.Float32, reflect.Float64:
		if n.tag != 'f' {
			return mismatch()
		}
		x := math.Float64frombits(n.bits)
		if v.Kind() == reflect.Float32 && x == x && float64(float32(x)) != x {
			return fmt.Errorf("%v is not a float32", x)
		}
		v.SetFloat(x)
		return nil
	case reflect.String:
		if n.tag != 's' {
			return mismatch()
		}
		v.SetString(n.str)
		return nil
	case reflect.Slice:
		if n.tag == 'n' {
			v.Set(reflect.Zero(t))
			return nil
		}
		if n.tag != 'l' {
			return mismatch()
		}
		s := reflect.MakeSlice(t, len(n.kids), len(n.kids))
		for i := range n.kids {
			if err := assign(&n.kids[i], s.Index(i), depth+1); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Array:
		if n.tag != 'l' {
			return mismatch()
		}
		if len(n.kids) != v.Len() {
			return fmt.Errorf("%d items cannot be a %s", len(n.kids), t)
		}
		for i := range n.kids {
			if err := assign(&n.kids[i], v.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.tag == 'n' {
			v.Set(reflect.Zero(t))
			return nil
		}
		if n.tag != 'm' {
			return mismatch()
		}
		m := reflect.MakeMapWithSize(t, len(n.kids)/2)
		for i := 0; i+1 < len(n.kids); i += 2 {
			key := reflect.New(t.Key()).Elem()
			if err := assign(&n.kids[i], key, depth+1); err != nil {
				return err
			}
			if key.Kind() == reflect.Interface && !key.IsNil() && !key.Elem().Type().Comparable() {
				return fmt.Errorf("a %s cannot be a map key", key.Elem().Type())
			}
			val := reflect.New(t.Elem()).Elem()
			if err := assign(&n.kids[i+1], val, depth+1); err != nil {
				return err
			}
			m.SetMapIndex(key, val)
		}
		v.Set(m)
		return nil
	case reflect.Ptr:
		if n.tag == 'n' {
			v.Set(reflect.Zero(t))
			return nil
		}
		p := reflect.New(t.Elem())
		if err := assign(n, p.Elem(), depth+1); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		if n.tag != 't' {
			return mismatch()
		}
		if len(n.kids) != v.NumField() {
			return fmt.Errorf("%d items cannot be a %s", len(n.kids), t)
		}
		for i := range n.kids {
			if t.Field(i).PkgPath != "" {
				return fmt.Errorf("a %s has an unexported field", t)
			}
			if err := assign(&n.kids[i], v.Field(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("a %s cannot cross the bridge", t)
}

// dynamic decodes n for an interface{}, by its tag; the zero Value is nil.
func dynamic(n *node, depth int) (reflect.Value, error) {
	if depth > maxDepth {
		return reflect.Value{}, errors.New("values nested too deep")
	}
	switch n.tag {
	case 'n', 'u':
		return reflect.Value{}, nil
	case 'b':
		return reflect.ValueOf(n.flag), nil
	case 'i':
		x, err := strconv.ParseInt(n.num, 10, strconv.IntSize)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("%s does not fit an int", n.num)
		}
		return reflect.ValueOf(int(x)), nil
	case 'c':
		x, err := strconv.ParseInt(n.num, 10, 32)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("%s is not a rune", n.num)
		}
		return reflect.ValueOf(rune(x)), nil
	case 'f':
		return reflect.ValueOf(math.Float64frombits(n.bits)), nil
	case 's':
		return reflect.ValueOf(n.str), nil
	case 'l', 't':
		items := make([]reflect.Value, len(n.kids))
		types := make([]reflect.Type, len(n.kids))
		for i := range n.kids {
			d, err := dynamic(&n.kids[i], depth+1)
			if err != nil {
				return d, err
			}
			items[i] = d
			if d.IsValid() {
				types[i] = d.Type()
			}
		}
		t := anySlice
		if common := commonType(types); common != nil {
			t = reflect.SliceOf(common)
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, d := range items {
			if d.IsValid() {
				s.Index(i).Set(d)
			}
		}
		return s, nil
	case 'm':
		var keys, vals []reflect.Value
		var ktypes, vtypes []reflect.Type
		for i := 0; i+1 < len(n.kids); i += 2 {
			k, err := dynamic(&n.kids[i], depth+1)
			if err != nil {
				return k, err
			}
			if k.IsValid() && !k.Type().Comparable() {
				return reflect.Value{}, fmt.Errorf("a %s cannot be a map key", k.Type())
			}
			v, err := dynamic(&n.kids[i+1], depth+1)
			if err != nil {
				return v, err
			}
			keys, vals = append(keys, k), append(vals, v)
			ktypes, vtypes = append(ktypes, typeOf(k)), append(vtypes, typeOf(v))
		}
		t := mapType(commonType(ktypes), commonType(vtypes))
		m := reflect.MakeMapWithSize(t, len(keys))
		for i := range keys {
			k, v := keys[i], vals[i]
			if !k.IsValid() {
				k = reflect.Zero(t.Key())
			}
			if !v.IsValid() {
				v = reflect.Zero(t.Elem())
			}
			m.SetMapIndex(k, v)
		}
		return m, nil
	}
	return reflect.Value{}, fmt.Errorf("unknown tag %q", n.tag)
}

func typeOf(v reflect.Value) reflect.Type {
	if !v.IsValid() {
		return nil
	}
	return v.Type()
}

// ---------------------------------------------------------------- frames

func readFrame(r *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			if err == io.EOF && len(head) == 0 {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("the stream ended inside a frame's length (%v)", err)
		}
		if c == ':' {
			break
		}
		if c < '0' || c > '9' || len(head) > 12 {
			return nil, fmt.Errorf("a frame's length must be decimal digits, got %q", append(head, c))
		}
		head = append(head, c)
	}
	if len(head) == 0 {
		return nil, errors.New("a frame's length is empty")
	}
	size, err := strconv.Atoi(string(head))
	if err != nil || size > MaxFrameBytes {
		return nil, fmt.Errorf("a frame of %s bytes is over the limit of %d", head, MaxFrameBytes)
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, errors.New("the stream ended inside a frame")
	}
	return payload, nil
}

func writeFrame(w io.Writer, payload []byte) error {
	if len(payload) > MaxFrameBytes {
		return fmt.Errorf("a frame of %d bytes is over the limit of %d", len(payload), MaxFrameBytes)
	}
	frame := strconv.AppendInt(nil, int64(len(payload)), 10)
	frame = append(frame, ':')
	_, err := w.Write(append(frame, payload...))
	return err
}

// ---------------------------------------------------------------- the harness's side

var (
	callMu   sync.Mutex
	callConn *os.File
	callIn   *bufio.Reader
)

// fail ends the harness: a call that cannot be carried out is a failed run,
// never a panic a test could recover as the function's own.
func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "arbiter bridge: "+format+"\n", args...)
	os.Exit(97)
}

// Call sends one call to the candidate's process and decodes its reply into
// results. args and results are pointers to the stub's parameters and result
// variables, so that their declared types (an interface{} among them) are
// what is encoded and decoded. A panic in the candidate's function panics here
// with its message; a reply that is missing, malformed or not of the declared
// types ends the harness with a failure.
func Call(name string, args []interface{}, results []interface{}) {
	callMu.Lock()
	defer callMu.Unlock()
	if callConn == nil {
		callConn = os.NewFile(3, "arbiter-bridge")
		callIn = bufio.NewReader(callConn)
	}
	req := []byte("l2:")
	req = appendString(req, name)
	req = append(req, 'l')
	req = strconv.AppendInt(req, int64(len(args)), 10)
	req = append(req, ':')
	for i, a := range args {
		var err error
		if req, err = encode(req, reflect.ValueOf(a).Elem(), false, 0); err != nil {
			fail("%s: argument %d cannot be sent: %v", name, i+1, err)
		}
	}
	if err := writeFrame(callConn, req); err != nil {
		fail("%s: the call cannot be sent: %v", name, err)
	}
	reply, err := readFrame(callIn)
	if err == io.EOF {
		fail("%s: the candidate's process ended without a reply", name)
	}
	if err != nil {
		fail("%s: a malformed reply: %v", name, err)
	}
	if len(reply) == 0 {
		fail("%s: an empty reply", name)
	}
	n, err := parseAll(reply[1:])
	if err != nil {
		fail("%s: a malformed reply: %v", name, err)
	}
	switch reply[0] {
	case 'x':
		if n.tag != 's' {
			fail("%s: a malformed exception reply", name)
		}
		panic(n.str)
	case 'r':
		if err := assignResults(&n, results); err != nil {
			fail("%s: the reply is not of the declared type: %v", name, err)
		}
	default:
		fail("%s: a reply must begin with r or x, not %q", name, reply[0])
	}
}

func assignResults(n *node, results []interface{}) error {
	switch len(results) {
	case 0:
		if n.tag != 'n' {
			return fmt.Errorf("a %q value for a function without results", n.tag)
		}
		return nil
	case 1:
		return assign(n, reflect.ValueOf(results[0]).Elem(), 0)
	}
	if n.tag != 't' || len(n.kids) != len(results) {
		return fmt.Errorf("%d results need a tuple of %d", len(results), len(results))
	}
	for i := range results {
		if err := assign(&n.kids[i], reflect.ValueOf(results[i]).Elem(), 0); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------- the candidate's side

// Serve answers calls on descriptor 3 with the functions in funcs, by name,
// until the harness closes its end; then the process exits. Called from the
// dispatcher's init, it never returns.
func Serve(funcs map[string]interface{}) {
	conn := os.NewFile(3, "arbiter-bridge")
	if conn == nil {
		fmt.Fprintln(os.Stderr, "arbiter bridge: no descriptor 3")
		os.Exit(98)
	}
	in := bufio.NewReader(conn)
	// A process the candidate forks (a raw fork system call) comes back through here
	// as well, holding the channel: it never answers for the run, so it leaves at once.
	owner := os.Getpid()
	die := func(format string, args ...interface{}) {
		fmt.Fprintf(os.Stderr, "arbiter bridge: "+format+"\n", args...)
		os.Exit(98)
	}
	for {
		payload, err := readFrame(in)
		if err == io.EOF {
			os.Exit(0)
		}
		if err != nil {
			die("a malformed request: %v", err)
		}
		req, err := parseAll(payload)
		if err != nil || req.tag != 'l' || len(req.kids) != 2 || req.kids[0].tag != 's' || req.kids[1].tag != 'l' {
			die("a malformed request")
		}
		name, args := req.kids[0].str, req.kids[1].kids
		f, ok := funcs[name]
		if !ok {
			die("no function %q", name)
		}
		fv := reflect.ValueOf(f)
		ft := fv.Type()
		if ft.NumIn() != len(args) {
			die("%s takes %d arguments, not %d", name, ft.NumIn(), len(args))
		}
		ins := make([]reflect.Value, len(args))
		for i := range args {
			ins[i] = reflect.New(ft.In(i)).Elem()
			if err := assign(&args[i], ins[i], 0); err != nil {
				die("%s: argument %d: %v", name, i+1, err)
			}
		}
		outs, message, panicked := invoke(fv, ins)
		if os.Getpid() != owner {
			syscall.Exit(0)
		}
		var reply []byte
		if panicked {
			reply = appendString([]byte("x"), message)
		} else {
			reply = []byte("r")
			switch len(outs) {
			case 0:
				reply = append(reply, 'n')
			case 1:
				reply, err = encode(reply, outs[0], false, 0)
			default:
				reply = append(reply, 't')
				reply = strconv.AppendInt(reply, int64(len(outs)), 10)
				reply = append(reply, ':')
				for _, out := range outs {
					if reply, err = encode(reply, out, false, 0); err != nil {
						break
					}
				}
			}
			if err != nil {
				die("%s: the result cannot be sent: %v", name, err)
			}
		}
		if err := writeFrame(conn, reply); err != nil {
			die("%s: the reply cannot be sent: %v", name, err)
		}
	}
}

// invoke calls fv on its own goroutine: a panic (or runtime.Goexit) becomes
// the message of an x reply.
func invoke(fv reflect.Value, ins []reflect.Value) (outs []reflect.Value, message string, panicked bool) {
	done := make(chan struct{})
	go func() {
		finished := false
		defer func() {
			if !finished {
				panicked = true
				if r := recover(); r != nil {
					message = fmt.Sprint(r)
				} else {
					message = "panic(nil) or runtime.Goexit"
				}
			}
			close(done)
		}()
		if fv.Type().IsVariadic() {
			outs = fv.CallSlice(ins)
		} else {
			outs = fv.Call(ins)
		}
		finished = true
	}()
	<-done
	return outs, message, panicked
}
