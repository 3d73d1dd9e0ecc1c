package dev.layover.core.tokens;

import com.openai.core.http.HttpResponseFor;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.completions.CompletionUsage;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCompletedEvent;
import com.openai.models.responses.ResponseFailedEvent;
import com.openai.models.responses.ResponseIncompleteEvent;
import com.openai.models.responses.ResponseStreamEvent;
import com.openai.models.responses.ResponseUsage;
import dev.layover.core.provider.Provider;
import java.util.Optional;

/**
 * Reads usage from openai-java's model types. Only loaded after {@link SdkUsage} has seen a
 * {@code com.openai} object.
 */
final class OpenAiUsage {

    private OpenAiUsage() {}

    static Optional<TokenUsage> read(Object o) {
        if (o instanceof ChatCompletion c) {
            return c.usage().map(OpenAiUsage::of);
        }
        if (o instanceof ChatCompletionChunk c) {
            return c.usage().map(OpenAiUsage::of);
        }
        if (o instanceof CompletionUsage u) {
            return Optional.of(of(u));
        }
        if (o instanceof Response r) {
            return r.usage().map(OpenAiUsage::of);
        }
        if (o instanceof ResponseUsage u) {
            return Optional.of(of(u));
        }
        if (o instanceof ResponseCompletedEvent e) {
            return read(e.response());
        }
        if (o instanceof ResponseIncompleteEvent e) {
            return read(e.response());
        }
        if (o instanceof ResponseFailedEvent e) {
            return read(e.response());
        }
        if (o instanceof ResponseStreamEvent e) {
            return e.completed().map(OpenAiUsage::read)
                    .or(() -> e.incomplete().map(OpenAiUsage::read))
                    .or(() -> e.failed().map(OpenAiUsage::read))
                    .orElse(Optional.empty());
        }
        if (o instanceof HttpResponseFor<?> r) {
            return SdkUsage.read(r.parse());
        }
        return Optional.empty();
    }

    /** Chat Completions: {@code prompt_tokens} includes {@code cached_tokens}. */
    private static TokenUsage of(CompletionUsage u) {
        long cached = u.promptTokensDetails().flatMap(d -> d.cachedTokens()).orElse(0L);
        long written = u.promptTokensDetails().flatMap(d -> d.cacheWriteTokens()).orElse(0L);
        return new TokenUsage(Provider.OPENAI, u.promptTokens(), u.completionTokens(), cached, written);
    }

    /** Responses API: {@code input_tokens} includes {@code input_tokens_details.cached_tokens}. */
    private static TokenUsage of(ResponseUsage u) {
        Optional<ResponseUsage.InputTokensDetails> details = u._inputTokensDetails().asKnown();
        long cached = details.flatMap(d -> d._cachedTokens().asKnown()).orElse(0L);
        long written = details.flatMap(d -> d._cacheWriteTokens().asKnown()).orElse(0L);
        return new TokenUsage(Provider.OPENAI, u.inputTokens(), u.outputTokens(), cached, written);
    }
}
