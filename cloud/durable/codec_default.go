package durable

// defaultCodec decodes batches; it becomes edge/wire/batch once merged.
var defaultCodec batchCodec = stubCodec{}
