package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// object is a JSON object that keeps its members in the order they were given, so the documents
// read top-down (openapi, info, servers, paths, ...) instead of in Go's sorted map order.
type object []member

type member struct {
	key   string
	value any
}

// obj builds an object from alternating keys and values.
func obj(kv ...any) object {
	if len(kv)%2 != 0 {
		panic("discovery: obj needs key, value pairs")
	}
	o := make(object, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		o = append(o, member{key: kv[i].(string), value: kv[i+1]})
	}
	return o
}

// set adds or replaces a member.
func (o *object) set(key string, value any) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = value
			return
		}
	}
	*o = append(*o, member{key, value})
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
