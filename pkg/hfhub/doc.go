// Package hfhub turns a --model-path into a local model directory: a local
// directory is used as is; a path that does not exist but looks local (a
// path separator and not of the form org/name, or an existing parent
// directory: "models/dmeo" where models/ exists) is reported as missing,
// never looked up on the hub; a Hugging Face hub id ("org/name") is resolved
// through the hub API and the files a worker needs (config.json,
// tokenizer.json, tokenizer_config.json, generation_config.json,
// chat_template.jinja, special_tokens_map.json; never weights) are
// downloaded into the standard Hugging Face cache, which Python tools share:
//
//	{HubCache}/models--{org}--{name}/
//	    blobs/{etag}                         file contents
//	    snapshots/{commit}/{file}         -> ../../blobs/{etag}
//	    refs/{revision}                      the commit the revision points to
//	    .no_exist/{commit}/{file}            marks files the repo does not have
//
// A revision already in the cache with all the files (present or marked
// absent) is used without any network access; Offline (HF_HUB_OFFLINE)
// forbids network access altogether. Files are written to a temporary file
// and renamed into place, so concurrent resolvers on one machine are safe.
//
// Configuration comes in through Config; ConfigFromEnv maps the usual
// environment variables (HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN,
// HF_HUB_OFFLINE) for main. Errors wrap ErrNotFound, ErrUnauthorized,
// ErrNotCached or ErrInvalidPath. Resolve is safe for concurrent use.
package hfhub
