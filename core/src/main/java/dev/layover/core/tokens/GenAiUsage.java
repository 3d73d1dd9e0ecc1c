package dev.layover.core.tokens;

import com.google.genai.types.GenerateContentResponse;
import com.google.genai.types.GenerateContentResponseUsageMetadata;
import dev.layover.core.provider.Provider;
import java.util.Optional;

/**
 * Reads usage from google-genai's {@code GenerateContentResponse.usageMetadata}. Only loaded after
 * {@link SdkUsage} has seen a {@code com.google.genai} object.
 *
 * <p>{@code promptTokenCount} includes {@code cachedContentTokenCount}; the tool-use prompt is
 * added to the input and the thoughts to the output (see {@link TokenUsage}).
 */
final class GenAiUsage {

    private GenAiUsage() {}

    static Optional<TokenUsage> read(Object o) {
        if (o instanceof GenerateContentResponse r) {
            return r.usageMetadata().flatMap(GenAiUsage::of);
        }
        if (o instanceof GenerateContentResponseUsageMetadata m) {
            return of(m);
        }
        return Optional.empty();
    }

    private static Optional<TokenUsage> of(GenerateContentResponseUsageMetadata m) {
        if (m.promptTokenCount().isEmpty() && m.candidatesTokenCount().isEmpty() && m.totalTokenCount().isEmpty()) {
            return Optional.empty();
        }
        long input = (long) m.promptTokenCount().orElse(0) + m.toolUsePromptTokenCount().orElse(0);
        long output = (long) m.candidatesTokenCount().orElse(0) + m.thoughtsTokenCount().orElse(0);
        long cached = m.cachedContentTokenCount().orElse(0);
        return Optional.of(new TokenUsage(Provider.GEMINI, input, output, cached, 0));
    }
}
