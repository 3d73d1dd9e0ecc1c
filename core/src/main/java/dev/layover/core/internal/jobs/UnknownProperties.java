package dev.layover.core.internal.jobs;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.deser.DeserializationProblemHandler;
import java.io.IOException;

/**
 * Notes, on the reading thread, the first property of stored args that the args type does not
 * know, and skips it: {@link ArgsCodec#read} then checks that nothing the type declares is missing.
 */
final class UnknownProperties extends DeserializationProblemHandler {

    static final UnknownProperties HANDLER = new UnknownProperties();
    static final ThreadLocal<String> SEEN = new ThreadLocal<>();

    private UnknownProperties() {}

    @Override
    public boolean handleUnknownProperty(DeserializationContext ctxt, JsonParser p, JsonDeserializer<?> deserializer,
            Object beanOrClass, String propertyName) throws IOException {
        if (SEEN.get() == null) {
            SEEN.set(propertyName);
        }
        p.skipChildren();
        return true;
    }
}
