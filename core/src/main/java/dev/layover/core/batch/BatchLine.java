package dev.layover.core.batch;

import java.util.Objects;

/**
 * One request line of a batch, as Layover hands it to a {@link BatchTransport}: the job's stable
 * custom id ({@code lo-<item id>}, the same on every submit attempt, so a rejoined batch maps back)
 * and the request body the job type's {@link Batching} made from its args (JSON text: for OpenAI
 * the body of the endpoint's request, for Anthropic the {@code params} of a Messages request).
 *
 * @param customId the line's custom id, unique within the batch; not blank
 * @param body the request body, JSON text; not blank
 */
public record BatchLine(String customId, String body) {

    /** @throws IllegalArgumentException for a blank id or body */
    public BatchLine {
        Objects.requireNonNull(customId, "customId");
        Objects.requireNonNull(body, "body");
        if (customId.isBlank() || body.isBlank()) {
            throw new IllegalArgumentException("a batch line needs a custom id and a body");
        }
    }
}
