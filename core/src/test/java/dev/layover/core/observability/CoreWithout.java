package dev.layover.core.observability;

import static org.junit.jupiter.api.Assertions.assertNotSame;

import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.TestDatabase;
import java.lang.reflect.Array;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Layover core's own classes loaded by themselves (from its compiled classes), everything else from
 * the test's class loader, and every class of one optional library refused: what a user without that
 * library on the class path runs.
 */
final class CoreWithout extends URLClassLoader {

    private final ClassLoader app;
    private final String refused;

    /**
     * @param app the test's class loader
     * @param refusedPackage the optional library's package prefix, e.g. {@code io.micrometer.}
     */
    CoreWithout(ClassLoader app, String refusedPackage) {
        super(new URL[] {location(Layover.class)}, null);
        this.app = app;
        this.refused = refusedPackage;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (name.startsWith(refused)) {
            throw new ClassNotFoundException(name + " (" + refused + "* is not on this class path)");
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

    /** Checks made on a running instance of the isolated core: its {@code Layover} class and the instance. */
    interface Checks {
        void check(Class<?> layoverClass, Object layover) throws Exception;
    }

    /**
     * Starts the isolated core with one job type whose handler returns done, enqueues one job, waits
     * for its history row, runs {@code checks}, stops.
     */
    void runOneJob(TestDatabase db, String typeName, Checks checks) throws Exception {
        Class<?> layoverClass = loadClass(Layover.class.getName());
        assertNotSame(Layover.class, layoverClass, "core loaded in isolation");
        Class<?> jobTypeClass = loadClass("dev.layover.core.JobType");
        Class<?> handlerClass = loadClass("dev.layover.core.JobHandler");
        Object handler = Proxy.newProxyInstance(this, new Class<?>[] {handlerClass}, (proxy, m, a) -> {
            if (m.getName().equals("handle")) {
                return null; // done
            }
            if (m.getName().equals("toString")) {
                return "done";
            }
            return m.getName().equals("hashCode") ? 1 : a != null && a.length == 1 && proxy == a[0];
        });
        Object typeBuilder = jobTypeClass.getMethod("builder", String.class, Class.class).invoke(null, typeName, Map.class);
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
                    () -> db.count("select count(*) from layover.job_history where job_type = '" + typeName + "'"));
            checks.check(layoverClass, layover);
        } finally {
            layoverClass.getMethod("stop").invoke(layover);
        }
    }

    private static Object call(Object target, String method, Class<?> type, Object arg) throws Exception {
        return target.getClass().getMethod(method, type).invoke(target, arg);
    }

    static URL location(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    /**
     * Loads every class of core without the library and resolves every type its signatures name.
     *
     * @return the classes that need the library
     */
    static List<String> classesNeeding(ClassLoader app, String refusedPackage) throws Exception {
        Path classes = Path.of(location(Layover.class).toURI());
        List<String> names = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            files.filter(p -> p.toString().endsWith(".class")).forEach(p -> {
                String rel = classes.relativize(p).toString();
                names.add(rel.substring(0, rel.length() - ".class".length()).replace('/', '.').replace('\\', '.'));
            });
        }
        if (names.size() <= 50) {
            throw new AssertionError("core's classes: " + names.size());
        }
        List<String> needing = new ArrayList<>();
        try (CoreWithout loader = new CoreWithout(app, refusedPackage)) {
            for (String name : names) {
                try {
                    Class<?> c = Class.forName(name, true, loader);
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
        return needing;
    }
}
