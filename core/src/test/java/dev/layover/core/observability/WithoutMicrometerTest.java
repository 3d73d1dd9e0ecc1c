package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.core.metrics.MicrometerMetrics;
import dev.layover.testing.Await;
import dev.layover.testing.LayoverPostgresExtension;
import dev.layover.testing.TestDatabase;
import java.lang.reflect.Array;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A user without Micrometer pays nothing: Layover core runs (jobs, history) in a class loader where
 * Micrometer does not exist, and no class but {@link MicrometerMetrics} needs it.
 */
@ExtendWith(LayoverPostgresExtension.class)
class WithoutMicrometerTest {

    /**
     * Loads Layover core's own classes itself (from its compiled classes), everything else from the
     * test's class loader, and refuses every Micrometer class.
     */
    static final class NoMicrometerLoader extends URLClassLoader {
        private final ClassLoader app;

        NoMicrometerLoader(ClassLoader app) {
            super(new URL[] {location(Layover.class)}, null);
            this.app = app;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.startsWith("io.micrometer.")) {
                throw new ClassNotFoundException(name + " (Micrometer is not on this class path)");
            }
            synchronized (getClassLoadingLock(name)) {
                if (name.startsWith("dev.layover.core.")) {
                    Class<?> c = findLoadedClass(name);
                    if (c == null) {
                        c = findClass(name);
                    }
                    if (resolve) {
                        resolveClass(c);
                    }
                    return c;
                }
                return app.loadClass(name);
            }
        }

        boolean loaded(String name) {
            return findLoadedClass(name) != null;
        }
    }

    private static URL location(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    @Test
    void jobsRunAndLeaveHistoryWithoutMicrometer(TestDatabase db) throws Exception {
        try (NoMicrometerLoader loader = new NoMicrometerLoader(getClass().getClassLoader())) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("io.micrometer.core.instrument.MeterRegistry"));
            Class<?> layoverClass = loader.loadClass(Layover.class.getName());
            assertNotSame(Layover.class, layoverClass, "core loaded in isolation");

            Class<?> jobTypeClass = loader.loadClass("dev.layover.core.JobType");
            Class<?> handlerClass = loader.loadClass("dev.layover.core.JobHandler");
            Object handler = Proxy.newProxyInstance(loader, new Class<?>[] {handlerClass}, (proxy, m, a) -> {
                if (m.getName().equals("handle")) {
                    return null; // done
                }
                if (m.getName().equals("toString")) {
                    return "done";
                }
                return m.getName().equals("hashCode") ? 1 : a != null && a.length == 1 && proxy == a[0];
            });
            Object typeBuilder = jobTypeClass.getMethod("builder", String.class, Class.class).invoke(null, "plain", Map.class);
            typeBuilder = typeBuilder.getClass().getMethod("handler", handlerClass).invoke(typeBuilder, handler);
            Object type = typeBuilder.getClass().getMethod("build").invoke(typeBuilder);

            Object b = layoverClass.getMethod("builder", DataSource.class).invoke(null, db.dataSource());
            Object types = Array.newInstance(jobTypeClass, 1);
            Array.set(types, 0, type);
            b = call(b, "register", types.getClass(), types);
            b = call(b, "pollInterval", Duration.class, Duration.ofMillis(50));
            b = call(b, "shutdownMaxWait", Duration.class, Duration.ofSeconds(5));
            Object layover = b.getClass().getMethod("start").invoke(b);
            try {
                layoverClass.getMethod("enqueue", jobTypeClass, Object.class).invoke(layover, type, Map.of("text", "x"));
                Await.equal(ObservabilityFixtures.WAIT, "history rows", 1L,
                        () -> db.count("select count(*) from layover.job_history where job_type = 'plain'"));
                Object metrics = layoverClass.getMethod("metrics").invoke(layover);
                assertTrue(String.valueOf(metrics).contains("none"), String.valueOf(metrics));
            } finally {
                layoverClass.getMethod("stop").invoke(layover);
            }
            assertTrue(loader.loaded("dev.layover.core.internal.engine.Engine"), "the engine ran in isolation");
            assertTrue(!loader.loaded(MicrometerMetrics.class.getName()), "MicrometerMetrics was never loaded");
        }
    }

    @Test
    void noClassButMicrometerMetricsNeedsMicrometer() throws Exception {
        Path classes = Path.of(location(Layover.class).toURI());
        List<String> names = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            files.filter(p -> p.toString().endsWith(".class")).forEach(p -> {
                String rel = classes.relativize(p).toString();
                names.add(rel.substring(0, rel.length() - ".class".length()).replace('/', '.').replace('\\', '.'));
            });
        }
        assertTrue(names.size() > 50, "core's classes: " + names.size());
        List<String> needing = new ArrayList<>();
        try (NoMicrometerLoader loader = new NoMicrometerLoader(getClass().getClassLoader())) {
            for (String name : names) {
                try {
                    Class<?> c = Class.forName(name, true, loader);
                    // resolves every type named in a signature
                    c.getDeclaredFields();
                    c.getDeclaredMethods();
                    c.getDeclaredConstructors();
                    for (Method m : c.getDeclaredMethods()) {
                        m.getGenericReturnType();
                        m.getGenericParameterTypes();
                    }
                } catch (NoClassDefFoundError | TypeNotPresentException e) {
                    needing.add(name);
                }
            }
        }
        assertTrue(needing.stream().allMatch(n -> n.startsWith(MicrometerMetrics.class.getName())),
                "only MicrometerMetrics needs Micrometer: " + needing);
        assertTrue(needing.contains(MicrometerMetrics.class.getName()), "and it does: " + needing);
    }

    private static Object call(Object target, String method, Class<?> type, Object arg) throws Exception {
        return target.getClass().getMethod(method, type).invoke(target, arg);
    }
}
