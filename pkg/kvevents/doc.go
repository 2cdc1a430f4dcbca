// Package kvevents subscribes to an inference engine's KV-cache events
// over ZeroMQ (vLLM's and SGLang's ZmqEventPublisher) and turns them into
// kvblock events, numbered for our routers.
//
// # Wire format
//
// The engine's PUB socket sends multipart messages of three frames:
// [topic, sequence number as 8 bytes big endian, payload]. The sequence
// counts batches from 0 per publisher. The payload is a msgpack
// KVEventBatch as msgspec encodes it:
//
//   - the batch: with array_like=True (vLLM, SGLang) an array
//     [ts, events] or [ts, events, data_parallel_rank] (omit_defaults drops
//     a nil trailing rank; SGLang has no rank field at all); a map with
//     keys ts, events, data_parallel_rank (or dp_rank) is read too;
//   - each event, tag=True: with array_like=True an array whose first
//     element is the class name, the fields following in declaration
//     order, trailing fields that hold their default (nil) left out by
//     omit_defaults; without array_like (recent vLLM) a map with the class
//     name under "type". Unknown trailing or extra fields are ignored:
//   - ["BlockStored", block_hashes, parent_block_hash, token_ids,
//     block_size, lora_id, medium, lora_name, extra_keys, group_idx,
//     kv_cache_spec_kind, kv_cache_spec_sliding_window]; the first four
//     are required (older engines stop after lora_id or medium);
//   - ["BlockRemoved", block_hashes, medium, group_idx]; block_hashes is
//     required;
//   - ["AllBlocksCleared"].
//
// Block hashes (ExternalBlockHash) are integers, taken as uint64 (a
// negative int64 as its two's complement), or bytes when vLLM runs with
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 (raw sha256 digests), mapped by
// HashFromBytes to the integer vLLM would have sent: the digest's last 8
// bytes read big endian.
//
// The optional ROUTER replay socket answers a request [identity, empty,
// start sequence as 8 bytes big endian] (we send [empty, sequence] from a
// DEALER) with one message [identity, empty, sequence, payload] per
// buffered batch from the start on, then the end marker [identity, empty,
// -1 as 8 bytes, empty payload].
//
// # Conversion
//
// BlockStored becomes a stored event: ParentHash is parent_block_hash;
// each block hash becomes a StoredBlock whose BlockHash is the engine's
// hash and whose TokensHash is kvblock.LocalBlockHash of the block's
// tokens, token_ids cut into Config.BlockSize tokens per hash (seeded with
// kvblock.SaltedSeed(lora_name, "") for a LoRA adapter). An event whose
// block_size is not Config.BlockSize, or whose token_ids are not exactly
// block_size tokens per hash, is skipped whole. BlockRemoved becomes a
// removed event, AllBlocksCleared a cleared one. Events of a medium other
// than GPU (CPU offload tiers) are skipped: the routers index the device
// cache. The data-parallel rank is the batch's data_parallel_rank, or
// Config.DefaultDPRank when the batch has none. Event ids are ours: 0, 1,
// 2, ... per rank in the order emitted, whatever the engine's sequence.
//
// # Gaps, restarts, garbage
//
// The subscriber tracks the publisher's sequence. When a batch arrives
// past the next expected one and a replay endpoint is set, it asks the
// replay socket for the batches from the first missing one and applies
// them in order before the live batch; batches already applied are dropped
// as duplicates. The live stream is not read during a replay: its
// batches wait in the socket (the engine's high-water mark bounds them).
// What the replay cannot fill (no replay endpoint, a timeout, or an
// engine buffer that has moved past the gap) is logged and counted as
// unrecovered, and the stream goes on. That is what the reference system
// does with an engine gap: its listener passes the engine's sequence on as
// the event id and its router, unable to fetch the missing range, logs
// that the index may lag and goes on applying later events; nothing is
// cleared, since clearing would drop every correct block to forget a few
// stale ones. When the subscriber first joins a running engine with a
// replay endpoint, it fetches the history the engine still buffers (from
// sequence 0); that is not counted as a gap.
//
// A sequence number at or below the last one read from the live stream
// means the engine restarted (a PUB socket never goes back), and so did
// its cache: the subscriber emits a cleared event for every dp rank it has
// seen, then follows the new sequence (fetching its start through the
// replay socket when it has one). A restarted engine whose sequence has
// already passed the old one before the subscriber reconnects is taken for
// a gap.
//
// A message that is not three frames with an 8-byte sequence, a payload
// that is not a batch, and an event with an unknown tag or unreadable
// fields are skipped, counted and logged (one warning per kind every ten
// seconds, the rest at debug); the rest of the batch and the stream go
// on. When the connection breaks, the subscriber dials again with a
// backoff of 50 ms doubling to 2 s.
//
// Not handled: EAGLE's bigram token_ids (the event is skipped),
// extra_keys (multimodal hashes and cache salts: such blocks get a
// TokensHash the router's salted or multimodal hashing will not match),
// group_idx (hybrid models' KV cache groups are not told apart), and
// kv_cache_spec_* fields.
package kvevents
