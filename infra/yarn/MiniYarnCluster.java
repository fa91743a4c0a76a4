import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * HDFS and YARN for the tests, in one JVM: a MiniDFSCluster (one data node) and a MiniYARNCluster
 * (one resource manager, one node manager), both from hadoop-client-minicluster.
 *
 * <p>Hadoop's own MiniHadoopClusterManager starts YARN only through MiniMRYarnCluster, which needs
 * MapReduce's application master classes that the shaded minicluster jar does not carry
 * (NoClassDefFoundError: org/apache/hadoop/mapred/LocalContainerLauncher); Spark needs YARN only.
 *
 * <p>Usage: {@code MiniYarnCluster <name node port> <conf dir> [key=value ...]}. The settings apply
 * to both clusters. Once both are up and the node manager has registered, it writes a client's
 * {@code core-site.xml}, {@code hdfs-site.xml} and {@code yarn-site.xml} into the conf dir (for
 * {@code HADOOP_CONF_DIR}), then {@code details.json} last, so its presence means ready. The node
 * manager's containers and their logs are under {@code target/} of the working directory.
 */
public final class MiniYarnCluster {
    public static void main(String[] args) {
        try {
            start(args);
        } catch (Throwable failure) {
            // the clusters' own threads would keep a half-started JVM alive: end it, the log says why
            failure.printStackTrace();
            System.exit(1);
        }
    }

    private static void start(String[] args) throws Exception {
        int nameNodePort = Integer.parseInt(args[0]);
        Path confDir = Paths.get(args[1]);
        YarnConfiguration conf = new YarnConfiguration();
        for (int i = 2; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            conf.set(pair[0], pair[1]);
        }
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf)
            .nameNodePort(nameNodePort).numDataNodes(1).format(true).build();
        dfs.waitActive();
        String defaultFs = dfs.getFileSystem().getUri().toString();
        conf.set("fs.defaultFS", defaultFs);
        MiniYARNCluster yarn = new MiniYARNCluster("hudi-cdc", 1, 1, 1, 1);
        yarn.init(conf);
        yarn.start();
        if (!yarn.waitForNodeManagersToConnect(120_000)) {
            throw new IllegalStateException("the node manager did not register within 120 s");
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            yarn.stop();
            dfs.shutdown();
        }));

        Configuration core = new Configuration(false);
        core.set("fs.defaultFS", defaultFs);
        write(core, confDir.resolve("core-site.xml"));
        Configuration hdfs = new Configuration(false);
        for (Map.Entry<String, String> entry : conf) {
            if (entry.getKey().startsWith("dfs.client.") || entry.getKey().equals("dfs.replication")) {
                hdfs.set(entry.getKey(), entry.getValue());
            }
        }
        write(hdfs, confDir.resolve("hdfs-site.xml"));
        // the addresses the resource manager bound (port 0 became real ports) and the settings given
        Configuration started = yarn.getConfig();
        Configuration site = new Configuration(false);
        for (Map.Entry<String, String> entry : started) {
            if (entry.getKey().startsWith("yarn.")) {
                site.set(entry.getKey(), started.get(entry.getKey()));
            }
        }
        write(site, confDir.resolve("yarn-site.xml"));
        String details = String.format(
            "{\"namenode_port\": %d, \"resourcemanager_address\": \"%s\", \"work_dir\": \"%s\"}%n",
            dfs.getNameNodePort(), started.get(YarnConfiguration.RM_ADDRESS), yarn.getTestWorkDir().getAbsolutePath());
        Path tmp = confDir.resolve("details.json.tmp");
        Files.write(tmp, details.getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, confDir.resolve("details.json"));
    }

    private static void write(Configuration conf, Path path) throws Exception {
        try (OutputStream out = Files.newOutputStream(path)) {
            conf.writeXml(out);
        }
    }
}
