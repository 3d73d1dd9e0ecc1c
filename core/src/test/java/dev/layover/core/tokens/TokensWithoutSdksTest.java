package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.models.chat.completions.ChatCompletion;
import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The tokens package works for a user with none of the provider SDKs and without jtokkit. */
@PureTest
class TokensWithoutSdksTest {

    private static final List<String> OPTIONAL_PACKAGES =
            List.of("com.openai.", "com.anthropic.", "com.google.genai.", "software.amazon.", "com.knuddels.");

    /** Layover core and Jackson only, over the JDK's platform loader. */
    private static URLClassLoader coreOnly() {
        URL[] urls = {
            location(TokenUsage.class), location(ObjectMapper.class), location(JsonFactory.class),
            location(JsonInclude.class)
        };
        return new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
    }

    private static URL location(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    @Test
    void usageAndTextEstimatesWorkWithoutAnyOptionalDependency() throws Exception {
        try (URLClassLoader loader = coreOnly()) {
            for (String absent : List.of("com.openai.models.chat.completions.ChatCompletion",
                    "com.anthropic.models.messages.Message", "com.google.genai.types.GenerateContentResponse",
                    "software.amazon.awssdk.services.bedrockruntime.model.ConverseResponse",
                    "com.knuddels.jtokkit.Encodings")) {
                assertThrows(ClassNotFoundException.class, () -> loader.loadClass(absent), absent);
            }
            Class<?> usage = loader.loadClass(TokenUsage.class.getName());
            Class<?> provider = loader.loadClass(Provider.class.getName());
            @SuppressWarnings({"unchecked", "rawtypes"})
            Object anthropic = Enum.valueOf((Class) provider, "ANTHROPIC");
            Optional<?> read = (Optional<?>) usage.getMethod("fromJson", provider, String.class).invoke(null, anthropic,
                    "{\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":100,\"output_tokens\":5}}");
            assertEquals("TokenUsage[provider=ANTHROPIC, inputTokens=12, outputTokens=5, cachedInputTokens=100, "
                    + "cacheCreationInputTokens=0]", read.orElseThrow().toString());

            // an SDK object made where the SDK is visible, read where it is not: no usage, no error
            ChatCompletion completion = ChatCompletion.builder().id("c").created(1).model("gpt-4o")
                    .choices(List.of()).build();
            Method of = usage.getMethod("of", Object.class);
            assertEquals(Optional.empty(), of.invoke(null, completion));
            assertEquals(Optional.empty(), of.invoke(null, new Object()));

            Class<?> estimator = loader.loadClass(TokenEstimator.class.getName());
            Object approximate = estimator.getMethod("approximate").invoke(null);
            assertEquals(2L, estimator.getMethod("textTokens", String.class).invoke(approximate, "hello world"));
            Class<?> calibrated = loader.loadClass(CalibratedEstimator.class.getName());
            Object c = calibrated.getMethod("create").invoke(null);
            Object estimate = calibrated.getMethod("estimate", String.class, String.class).invoke(c, "k", "hello world");
            assertEquals(4L, estimate.getClass().getMethod("tokens").invoke(estimate));

            Class<?> counter = loader.loadClass(OpenAiTokenCounter.class.getName());
            assertEquals("cl100k_base", counter.getMethod("encodingFor", String.class).invoke(null, "gpt-4"));
            InvocationTargetException e = assertThrows(InvocationTargetException.class,
                    () -> estimator.getMethod("openAi", String.class).invoke(null, "gpt-4o"));
            assertTrue(e.getCause() instanceof IllegalStateException, String.valueOf(e.getCause()));
            assertTrue(e.getCause().getMessage().contains("com.knuddels:jtokkit"), e.getCause().getMessage());
        }
    }

    @Test
    void noOptionalDependencyTypeAppearsInTheApiOrFields() {
        for (Class<?> c : List.of(TokenUsage.class, StreamUsage.class, TokenDimension.class, CountingRule.class,
                TokenEstimator.class, ChatMessage.class, OpenAiTokenCounter.class, TextEstimator.class,
                CalibratedEstimator.class, CalibratedEstimator.Builder.class, CalibratedEstimator.Settings.class,
                CalibratedEstimator.Estimate.class, Calibration.class, EstimateGuard.class, EstimateGuard.Checked.class,
                SdkUsage.class, UsageJson.class)) {
            for (Field f : c.getDeclaredFields()) {
                assertOptionalFree(f.getGenericType().getTypeName(), c + "." + f.getName());
            }
            for (Method m : c.getDeclaredMethods()) {
                assertOptionalFree(m.getGenericReturnType().getTypeName(), c + "." + m.getName());
                for (Parameter p : m.getParameters()) {
                    assertOptionalFree(p.getParameterizedType().getTypeName(), c + "." + m.getName());
                }
            }
        }
    }

    private static void assertOptionalFree(String typeName, String where) {
        for (String pkg : OPTIONAL_PACKAGES) {
            assertFalse(typeName.contains(pkg), where + " uses " + typeName);
        }
    }
}
