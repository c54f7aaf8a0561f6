package schemacheck

import (
	"reflect"
	"sync"
)

// HeapBytes measures what the object graph reachable from root holds on the heap: every object
// reached through a pointer, slice, string, map or interface, counted once however many paths
// lead to it, at the size the allocator gives it (its size class). It is how the schema cache
// charges a compiled schema: by walking what the schema really keeps (the library's schema
// objects, the walker's graph, regular-expression programs, enum and const values, strings and
// maps, whatever their shape) rather than by a model of it, so that a schema of an unforeseen
// shape is charged what it costs. The library's unexported fields are read, never written.
//
// What it cannot see is counted by the calibration test instead (TestSchemaMemoryMeasured holds
// the result to runtime.MemStats): the captured variables of closures, and the internal layout
// of maps, which is modelled by heapMapBytes.
func HeapBytes(root any) int {
	m := heapMeter{seen: map[uintptr]struct{}{}}
	m.value(reflect.ValueOf(root))
	return m.total
}

type heapMeter struct {
	seen  map[uintptr]struct{} // the first byte of every object counted
	total int
}

// first records the object v refers to (a pointer, slice, string or map: reflect.Value.Pointer,
// its first byte) and tells whether it was not seen before. An address held as a number is a
// safe identity here: everything measured stays reachable from root while the meter runs, and
// Go's collector does not move objects.
func (m *heapMeter) first(v reflect.Value) bool {
	p := v.Pointer()
	if p == 0 {
		return false
	}
	if _, ok := m.seen[p]; ok {
		return false
	}
	m.seen[p] = struct{}{}
	return true
}

// value counts what v refers to (v itself is counted by its container).
func (m *heapMeter) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !m.first(v) {
			return
		}
		e := v.Elem()
		m.total += HeapAllocSize(int(e.Type().Size()))
		if heapHasPointers(e.Type()) {
			m.value(e)
		}
	case reflect.String:
		if v.Len() > 0 && m.first(v) {
			m.total += HeapAllocSize(v.Len())
		}
	case reflect.Slice:
		if v.Cap() == 0 || !m.first(v) {
			return
		}
		et := v.Type().Elem()
		m.total += HeapAllocSize(v.Cap() * int(et.Size()))
		if heapHasPointers(et) {
			for i := range v.Len() {
				m.value(v.Index(i))
			}
		}
	case reflect.Array:
		if heapHasPointers(v.Type().Elem()) {
			for i := range v.Len() {
				m.value(v.Index(i))
			}
		}
	case reflect.Struct:
		for _, i := range heapPointerFields(v.Type()) {
			m.value(v.Field(i))
		}
	case reflect.Map:
		if v.IsNil() || !m.first(v) {
			return
		}
		t := v.Type()
		m.total += heapMapBytes(v.Len(), int(t.Key().Size()), int(t.Elem().Size()))
		kp, ep := heapHasPointers(t.Key()), heapHasPointers(t.Elem())
		if kp || ep {
			for it := v.MapRange(); it.Next(); {
				if kp {
					m.value(it.Key())
				}
				if ep {
					m.value(it.Value())
				}
			}
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if !heapPointerShaped(e.Type()) {
			// A value that is not a single pointer is boxed in an allocation of its own. Its
			// address is not visible here, so a box reached twice is counted twice.
			m.total += HeapAllocSize(int(e.Type().Size()))
		}
		m.value(e)
	}
	// Funcs, channels and unsafe pointers are not followed (see HeapBytes).
}

// heapPointerShaped tells whether an interface holds a value of type t directly in its data
// word (a pointer, map, channel or func, or a struct or array of exactly one of those).
func heapPointerShaped(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Struct:
		return t.NumField() == 1 && heapPointerShaped(t.Field(0).Type)
	case reflect.Array:
		return t.Len() == 1 && heapPointerShaped(t.Elem())
	}
	return false
}

// heapTypes caches, per type, whether it holds pointers (bool) and, per struct type, the indices
// of its fields that do ([]int).
var heapTypes sync.Map

func heapHasPointers(t reflect.Type) bool {
	if v, ok := heapTypes.Load(t); ok {
		return v.(bool)
	}
	var has bool
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan,
		reflect.Func, reflect.UnsafePointer:
		has = true
	case reflect.Array:
		has = t.Len() > 0 && heapHasPointers(t.Elem())
	case reflect.Struct:
		has = len(heapPointerFields(t)) > 0
	}
	heapTypes.Store(t, has)
	return has
}

type heapFieldsKey struct{ t reflect.Type }

func heapPointerFields(t reflect.Type) []int {
	if v, ok := heapTypes.Load(heapFieldsKey{t}); ok {
		return v.([]int)
	}
	var idx []int
	for i := range t.NumField() {
		if heapHasPointers(t.Field(i).Type) {
			idx = append(idx, i)
		}
	}
	heapTypes.Store(heapFieldsKey{t}, idx)
	return idx
}

// heapMapBytes models a Go map of n entries (swiss tables): groups of eight slots, each group a
// control word and eight key-element pairs, filled to at most 7/8 and grown by doubling, plus
// the map's header and, past one group, its table and directory.
func heapMapBytes(n, key, elem int) int {
	const header = 48
	slot := key + elem
	if n <= 8 {
		return HeapAllocSize(header) + HeapAllocSize(8+8*slot)
	}
	capacity := 8
	for capacity*7/8 < n {
		capacity *= 2
	}
	// Tables hold at most 1024 slots; each table's header is about 48 bytes.
	tables := max(1, capacity/1024)
	return HeapAllocSize(header) + HeapAllocSize(tables*8) + tables*HeapAllocSize(48) +
		tables*HeapAllocSize(capacity/tables/8*(8+8*slot))
}

// heapSizeClasses are the Go allocator's size classes up to 32 KiB (runtime/sizeclasses.go); a
// larger object takes whole 8 KiB pages.
var heapSizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// HeapAllocSize is the bytes the allocator gives an object of n bytes.
func HeapAllocSize(n int) int {
	if n <= 0 {
		return 0
	}
	if n > heapSizeClasses[len(heapSizeClasses)-1] {
		return (n + 8191) &^ 8191
	}
	lo, hi := 0, len(heapSizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if heapSizeClasses[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return heapSizeClasses[lo]
}
