package modelcard

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Lora describes a LoRA adapter on its card (Card.Lora).
type Lora struct {
	// Name is the adapter's served name: what clients send as "model",
	// and what requests carry as backend.Routing.LoraName.
	Name string `json:"name"`
	// BaseModel is the DisplayName of the model the adapter applies to.
	BaseModel string `json:"base_model"`
	// Source is where the adapter was loaded from (file://DIR, hf://ORG/NAME).
	Source string `json:"source,omitempty"`
}

// ForLora returns a copy of the base model's card c as the card of the
// adapter name loaded from source: its served name, slug and Lora set, no
// aliases.
func (c *Card) ForLora(name, source string) *Card {
	a := *c
	a.DisplayName, a.Slug, a.Aliases = name, Slug(name), nil
	a.Lora = &Lora{Name: name, BaseModel: c.DisplayName, Source: source}
	a.MDCSum = ""
	return &a
}

// LoraSuffix is the key suffix (Record.ModelSuffix) of adapter name's
// card: one path segment, distinct for distinct names ("lora-" and the
// name's slug, with a hash of the name when the slug changed it).
func LoraSuffix(name string) string {
	s := Slug(name)
	if s != name {
		h := fnv.New32a()
		h.Write([]byte(name))
		s += "-" + strconv.FormatUint(uint64(h.Sum32()), 16)
	}
	return "lora-" + s
}

// LoraEndpoint is the endpoint, on a worker's component, that loads and
// unloads LoRA adapters (beside generate and FilesEndpoint). Its request
// is a LoraRequest; it answers one LoraResult.
const LoraEndpoint = "lora"

// Operations of a LoraRequest.
const (
	LoraLoad   = "load"   // load Name from Source, publish its card
	LoraUnload = "unload" // unload Name, withdraw its card
	LoraList   = "list"   // answer the adapters held
)

// LoraRequest asks a worker to load, unload or list adapters.
type LoraRequest struct {
	Op     string `json:"op"`
	Name   string `json:"lora_name,omitempty"`
	Source string `json:"source,omitempty"`
}

// LoraResult is a worker's answer on LoraEndpoint: the adapters it holds
// after the operation. A refused operation is a runtime error
// (TypeInvalidArgument for a bad name or source, with the reason).
type LoraResult struct {
	Adapters []LoraState `json:"adapters"`
	// MaxLoras is the worker's --max-loras: adapters active in its
	// engine at once (0: no limit). With Active it tells a router where
	// an adapter would need no swap.
	MaxLoras int `json:"max_loras,omitempty"`
	// ActiveSlots counts the engine's slots taken: active adapters and
	// those being loaded or unloaded.
	ActiveSlots int `json:"active_slots"`
}

// LoraState is one adapter a worker holds.
type LoraState struct {
	Name   string `json:"lora_name"`
	Source string `json:"source"`
	// Active: loaded in the engine now (with --max-loras, an adapter
	// held but not active is loaded again, in place of the least
	// recently used one, when a request needs it).
	Active bool `json:"active"`
}

// ValidLoraName reports whether name can name an adapter: non-empty,
// at most 128 bytes, without "/" or whitespace.
func ValidLoraName(name string) bool {
	return name != "" && len(name) <= 128 && !strings.ContainsAny(name, "/ \t\r\n")
}
