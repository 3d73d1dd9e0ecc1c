package dev.layover.samples.translate;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the translated segments out of a model's answer and checks that every requested segment
 * came back: the answer must be (after {@link JsonRepair}) an object {@code {"segments": [...]}}
 * with exactly as many non-blank strings as were sent, in order.
 */
public final class TranslationAnswer {

    private TranslationAnswer() {}

    /**
     * @param content the model's answer
     * @param finishReason its finish reason, or {@code null}
     * @param expected how many segments were sent
     * @return the translated segments, in order
     * @throws UnusableAnswerException when the answer is cut off, holds no JSON object, or misses
     *     (or adds) a segment
     */
    public static List<String> read(String content, String finishReason, int expected) throws UnusableAnswerException {
        return segments(JsonRepair.parse(content, finishReason), expected);
    }

    /**
     * @param answer the answer's JSON object
     * @param expected how many segments were sent
     * @return the translated segments, in order
     * @throws UnusableAnswerException when a segment is missing, blank, or extra
     */
    public static List<String> segments(JsonNode answer, int expected) throws UnusableAnswerException {
        JsonNode segments = answer.get("segments");
        if (segments == null || !segments.isArray()) {
            throw new UnusableAnswerException(false, "the answer has no \"segments\" array");
        }
        List<String> out = new ArrayList<>(expected);
        for (int i = 0; i < expected; i++) {
            JsonNode s = segments.get(i);
            if (s == null || !s.isTextual() || s.asText().isBlank()) {
                throw new UnusableAnswerException(false, "segment " + (i + 1) + " of " + expected
                        + " is missing from the answer (" + segments.size() + " came back)");
            }
            out.add(s.asText());
        }
        if (segments.size() > expected) {
            throw new UnusableAnswerException(false, "the answer has " + segments.size() + " segments, "
                    + expected + " were sent");
        }
        return out;
    }
}
