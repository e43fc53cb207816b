package graphkit.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Runs Neo4j Community embedded with a Bolt connector until SIGTERM (or stdin
 * closes, with --watch-stdin), so graphkit can test against a real server
 * without Docker.
 *
 * <pre>
 * java [JVM flags] -jar neo4j-launcher.jar --home DIR [--host 127.0.0.1] [--port 0]
 *      [--password-env VAR] [--pagecache 256m] [--watch-stdin]
 * </pre>
 *
 * Prints exactly one line {@code READY bolt://HOST:PORT} on stdout once Bolt
 * accepts connections; everything else goes to stderr or HOME/logs. Port 0
 * picks a free port, which the READY line reports (no probe-then-bind race).
 * The password is read from an environment variable, never from argv, so it
 * does not show up in {@code ps}; without --password-env auth is disabled.
 */
public final class Neo4jLauncher {

    private Neo4jLauncher() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        if (!opts.containsKey("home")) {
            usage("--home is required");
        }
        Path home = Path.of(opts.get("home")).toAbsolutePath();
        String host = opts.getOrDefault("host", "127.0.0.1");
        int port = Integer.parseInt(opts.getOrDefault("port", "0"));
        String password = null;
        if (opts.containsKey("password-env")) {
            password = System.getenv(opts.get("password-env"));
            if (password == null || password.isEmpty()) {
                usage("environment variable " + opts.get("password-env") + " is empty");
            }
        }

        // Read by Netty and the JDK when their classes load, i.e. after this line;
        // the same values Neo4j's own server scripts pass.
        System.setProperty("io.netty.tryReflectionSetAccessible", "true");
        System.setProperty("jdk.nio.maxCachedBufferSize", "1024");

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(GraphDatabaseSettings.auth_enabled, password != null)
                // Preallocation needs fallocate, which overlay/tmp filesystems refuse
                // (a WARN per log file); test and bench stores are small anyway.
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory,
                        parseBytes(opts.getOrDefault("pagecache", "256m")))
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        // The hook runs on SIGTERM/SIGINT and on System.exit (stdin watcher):
        // a clean shutdown checkpoints the store, so the next start needs no recovery.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                dbms.shutdown();
            } finally {
                System.err.println("neo4j-launcher: stopped");
                stopped.countDown();
            }
        }, "neo4j-launcher-shutdown"));

        if (password != null) {
            setPassword(dbms, password);
        }
        int boltPort = boltPort(dbms, port);
        System.out.println("READY bolt://" + host + ":" + boltPort);
        System.out.flush();

        if (opts.containsKey("watch-stdin")) {
            // A parent that dies without SIGTERM (e.g. a crashed pytest) closes
            // our stdin; stop then instead of leaking a JVM.
            Thread watcher = new Thread(() -> {
                try {
                    InputStream in = System.in;
                    while (in.read() != -1) {
                        // discard
                    }
                } catch (IOException ignored) {
                    // treat like EOF
                }
                System.exit(0);
            }, "neo4j-launcher-stdin");
            watcher.setDaemon(true);
            watcher.start();
        }
        stopped.await();
    }

    /** Make the built-in user {@code neo4j} use the given password, without a forced change. */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        try {
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        } catch (RuntimeException e) {
            // A restart on the same data dir: the password is already this one.
            if (!String.valueOf(e.getMessage()).contains("Old password and new password cannot be the same")) {
                throw e;
            }
        }
    }

    /** The port Bolt actually bound (differs from the requested one when that is 0). */
    private static int boltPort(DatabaseManagementService dbms, int requested) {
        GraphDatabaseAPI db = (GraphDatabaseAPI) dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        var address = db.getDependencyResolver()
                .resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT);
        return address != null ? address.getPort() : requested;
    }

    private static long parseBytes(String text) {
        String t = text.trim().toLowerCase();
        long unit = 1;
        char last = t.charAt(t.length() - 1);
        if (last == 'k' || last == 'm' || last == 'g') {
            unit = last == 'k' ? 1L << 10 : last == 'm' ? 1L << 20 : 1L << 30;
            t = t.substring(0, t.length() - 1);
        }
        return Long.parseLong(t) * unit;
    }

    private static Map<String, String> parse(String[] args) {
        java.util.HashMap<String, String> out = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                usage("unexpected argument " + a);
            }
            String name = a.substring(2);
            if (name.equals("watch-stdin")) {
                out.put(name, "");
            } else if (i + 1 < args.length) {
                out.put(name, args[++i]);
            } else {
                usage(a + " needs a value");
            }
        }
        return out;
    }

    private static void usage(String problem) {
        System.err.println("neo4j-launcher: " + problem);
        System.err.println("usage: --home DIR [--host 127.0.0.1] [--port 0] [--password-env VAR]"
                + " [--pagecache 256m] [--watch-stdin]");
        System.exit(2);
    }
}
