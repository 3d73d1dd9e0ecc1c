package dev.layover.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.internal.jobs.ArgsCodec;

/** JSON Layover stored (a group member's result, a signal's payload), read as the caller's type. */
final class StoredJson {

    private static final ObjectMapper JSON = ArgsCodec.defaultMapper();

    private StoredJson() {}

    /**
     * @param json the stored JSON, or null
     * @param type the class to read it as (Layover's default Jackson mapper)
     * @param what what it is, for the error ("the result of ...")
     * @return the value, or null when nothing was stored
     * @throws InvalidArgsException when the JSON does not read as {@code type}
     */
    static <T> T read(String json, Class<T> type, String what) {
        if (json == null) {
            return null;
        }
        try {
            return JSON.readValue(json, type);
        } catch (JsonProcessingException e) {
            throw new InvalidArgsException(what + " does not read as " + type.getName() + ": " + e.getOriginalMessage(), e);
        }
    }
}
