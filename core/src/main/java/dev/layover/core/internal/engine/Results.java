package dev.layover.core.internal.engine;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.internal.db.StoredText;
import dev.layover.core.internal.jobs.ArgsCodec;
import dev.layover.core.internal.jobs.JobRun;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** What a handler returned with done, as the JSON its history row keeps ({@code Outcome.done(result)}). */
final class Results {

    private static final Logger LOG = LoggerFactory.getLogger(Results.class);

    /** The largest result kept, in characters of JSON. */
    static final int MAX_CHARS = 64 * 1024;

    private static final ObjectMapper JSON = ArgsCodec.defaultMapper();

    private Results() {}

    /** @return the result as JSON text, or null when there is none or it cannot be kept (logged) */
    static String json(JobRun run, Object result) {
        if (result == null) {
            return null;
        }
        String json;
        try {
            json = JSON.writeValueAsString(result);
        } catch (JsonProcessingException | RuntimeException | StackOverflowError e) {
            LOG.warn("Job {}: its result ({}) cannot be written as JSON and is not kept: {}", run.label(),
                    result.getClass().getName(), e.toString());
            return null;
        }
        if (json.length() > MAX_CHARS) {
            LOG.warn("Job {}: its result is {} characters of JSON, over the {} kept; not kept (store large results "
                    + "elsewhere and return a reference)", run.label(), json.length(), MAX_CHARS);
            return null;
        }
        return json.contains("\\u0000") ? json.replace("\\u0000", "\\uFFFD") : StoredText.clean(json);
    }
}
