package dev.layover.core.batch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.util.Objects;

/**
 * A succeeded batch line, as a job type's {@link Batching} result function sees it.
 *
 * @param customId the line's custom id ({@code lo-<item>})
 * @param batchId Layover's batch id ({@code layover.batches.id})
 * @param status the line's HTTP status (200)
 * @param body the response body, JSON text: for OpenAI the endpoint's response (a chat
 *     completion), for Anthropic the Message
 * @param inputTokens the line's reported input tokens (0 when not reported)
 * @param outputTokens the line's reported output tokens (0 when not reported)
 */
public record BatchResult(String customId, long batchId, int status, String body, long inputTokens, long outputTokens) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** @throws NullPointerException for a null id or body */
    public BatchResult {
        Objects.requireNonNull(customId, "customId");
        Objects.requireNonNull(body, "body");
    }

    /**
     * @return the body read as a Jackson tree
     * @throws UncheckedIOException when the body is not JSON
     */
    public JsonNode json() {
        try {
            return JSON.readTree(body);
        } catch (java.io.IOException e) {
            throw new UncheckedIOException("batch line " + customId + " is not JSON", e);
        }
    }
}
