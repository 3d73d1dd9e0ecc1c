package dev.layover.core.internal.jobs;

import com.github.kagkarlsson.scheduler.serializer.Serializer;

/**
 * db-scheduler's serializer for Layover: task data is already JSON bytes, written and read by
 * {@link ArgsCodec}, so that an undeserializable row reaches Layover (and is parked as
 * {@code bad_args}) instead of failing inside db-scheduler.
 */
public final class PassThroughSerializer implements Serializer {

    @Override
    public byte[] serialize(Object data) {
        if (data == null) {
            return null;
        }
        if (data instanceof byte[] bytes) {
            return bytes;
        }
        throw new IllegalArgumentException("Layover stores args as JSON bytes; got " + data.getClass().getName());
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T deserialize(Class<T> clazz, byte[] serializedData) {
        return (T) serializedData;
    }
}
