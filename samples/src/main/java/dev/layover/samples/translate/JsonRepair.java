package dev.layover.samples.translate;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Gets the JSON object out of a model's answer, the way models actually write it: in a Markdown
 * code fence, or with a sentence before and after ("Sure! Here is the translation: {...} Let me
 * know..."). It strips the fence and the prose, and nothing more: an answer that was cut off
 * ({@code finish_reason: "length"}, or JSON whose braces do not balance) is refused, never
 * completed by guessing, because a guessed ending silently drops or invents content.
 *
 * <pre>{@code
 * JsonNode json = JsonRepair.parse(content, finishReason);   // or throws UnusableAnswerException
 * }</pre>
 *
 * <p>How: a {@code length} finish reason is refused at once. Otherwise the content of the first
 * code fence is taken when there is one (a fence opened and never closed means a truncated
 * answer); then, from each opening brace in turn, the object that starts there is delimited by
 * counting braces and brackets outside strings (escapes respected). The first one that balances
 * and parses is the answer. An object that is still open when the text ends refuses the answer as
 * truncated (a later brace would only be a fragment inside it); when objects balance but none
 * parses, the answer is refused as not JSON. Thread-safe.
 */
public final class JsonRepair {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String FENCE = "```";
    private static final int RAN_OUT = -1;
    private static final int MISMATCHED = -2;

    private JsonRepair() {}

    /**
     * @param content the model's answer ({@code choices[0].message.content})
     * @param finishReason the choice's finish reason ({@code stop}, {@code length}, ...), or
     *     {@code null} when unknown
     * @return the JSON object in it
     * @throws UnusableAnswerException when the answer was truncated or holds no JSON object
     */
    public static JsonNode parse(String content, String finishReason) throws UnusableAnswerException {
        if ("length".equals(finishReason)) {
            throw new UnusableAnswerException(true, "the answer was cut off (finish_reason: length)");
        }
        if (content == null || content.isBlank()) {
            throw new UnusableAnswerException(false, "the answer is empty");
        }
        String text = unfence(content);
        String parseError = null;
        for (int start = text.indexOf('{'); start >= 0; start = text.indexOf('{', start + 1)) {
            int end = matchingEnd(text, start);
            if (end == RAN_OUT) {
                // everything after this brace is inside an object that never closes: a later
                // brace would only find a fragment of the cut-off answer
                throw new UnusableAnswerException(true, "the answer's JSON does not close (truncated)");
            }
            if (end == MISMATCHED) {
                continue;
            }
            try {
                return JSON.readTree(text.substring(start, end + 1));
            } catch (JsonProcessingException e) {
                if (parseError == null) {
                    parseError = e.getOriginalMessage();
                }
            }
        }
        throw new UnusableAnswerException(false, parseError == null ? "the answer holds no JSON object"
                : "the answer's JSON does not parse: " + parseError);
    }

    /** The inside of the first code fence, or the content itself when it has none. */
    private static String unfence(String content) throws UnusableAnswerException {
        int open = content.indexOf(FENCE);
        if (open < 0) {
            return content;
        }
        int lineEnd = content.indexOf('\n', open);
        if (lineEnd < 0) {
            throw new UnusableAnswerException(true, "the answer's code fence is never closed (truncated)");
        }
        int close = content.indexOf(FENCE, lineEnd);
        if (close < 0) {
            throw new UnusableAnswerException(true, "the answer's code fence is never closed (truncated)");
        }
        return content.substring(lineEnd + 1, close);
    }

    /**
     * The index of the brace closing the object that starts at {@code start}; {@link #RAN_OUT}
     * when the text ends first, {@link #MISMATCHED} when a bracket closes the wrong thing.
     */
    private static int matchingEnd(String s, int start) {
        int depth = 0;
        boolean inString = false;
        for (int i = start; i < s.length(); i++) {
            char c = s.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                depth--;
                if (depth == 0) {
                    return c == '}' ? i : MISMATCHED;
                }
            }
        }
        return RAN_OUT;
    }
}
