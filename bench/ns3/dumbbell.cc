// ns-3 peer of tcplab's benchmark scenarios 1-3 (see bench/src/main.rs).
//
// n senders -> r1 -> r2 -> one receiver over point-to-point links: the bottleneck r1 -> r2
// at --rate with a drop-tail queue of one BDP (in 1500-byte packets), access links 10x
// faster with 1 us delay, the bottleneck's one-way delay = RTT/2 - 2 us. BulkSend from each
// sender to a PacketSink, 1448-byte segments, SACK and timestamps on.
//
// ns-3's TCP is set to Linux's values where ns-3 lets us: MinRto 200 ms (ns-3: 1 s),
// delayed-ACK timeout 40 ms (ns-3: 200 ms), initial cwnd 10, buffers at Linux's tcp_wmem /
// tcp_rmem maxima (ns-3 has no autotuning), pacing on for BBR (Linux BBR paces internally)
// and off for CUBIC (no fq). Differences ns-3 cannot remove are listed in BENCHMARKS.md
// (no RACK-TLP, no receive-window autotuning, 2-byte PPP framing instead of 14-byte
// Ethernet).
//
// Issue 8: a queue discipline on the bottleneck port (r1 -> r2) instead of the drop-tail
// device queue, mirroring tcplab's scenarios 6a/6b (tbf) and 9 (fq_codel):
//   --qdisc=tbf --tbfRate=100Mbps --tbfBurst=32768 --tbfLimit=250000 [--tbfChild=fq_codel]
//       ns3::TbfQueueDisc (rate, bucket `Burst` bytes, no peak rate); its child is a
//       FifoQueueDisc of `tbfLimit` bytes (what Linux's tbf installs: a bfifo of `limit`), or
//       an FqCoDelQueueDisc configured as below;
//   --qdisc=fq_codel
//       ns3::FqCoDelQueueDisc with Linux's fq_codel defaults: MaxSize 10240p, Flows 1024,
//       Target 5 ms, Interval 100 ms, DropBatchSize 64, UseEcn false (ns-3's default is
//       true), Perturbation 0 (a fixed hash salt, as a seeded run wants). Quantum: ns-3 has
//       no attribute and takes the device MTU (1500, it counts IP bytes) where Linux uses
//       1514 (it counts the Ethernet header): one full-size packet per round in both. ns-3
//       has no `memory_limit` (32 MB in Linux; never reached by these scenarios).
// With a qdisc the bottleneck device's own queue is 1 packet (Linux has BQL in front of
// the NIC; a deep device queue would sit behind the qdisc and out of its sight), and the
// qdisc counts IP packet sizes (tcplab's tbf counts whole Ethernet frames, as Linux's).
// ns-3 has no sch_fq with EDT timestamps: tcplab's fq scenarios have no ns-3 peer.
//
// Output: one JSON line with the goodput, the simulated seconds and ns-3's event count.
// The harness (bench/run.py) measures wall time and peak memory around the process.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

static std::vector<std::string> g_unset;

template <typename V>
static void
Set(const std::string& name, const V& value)
{
    if (!Config::SetDefaultFailSafe(name, value))
    {
        g_unset.push_back(name);
    }
}

int
main(int argc, char* argv[])
{
    std::string cc = "cubic";
    uint32_t flows = 1;
    std::string rate = "1Gbps";
    double rttMs = 20.0;
    double durationS = 20.0;
    CommandLine cmd;
    cmd.AddValue("cc", "cubic or bbr", cc);
    cmd.AddValue("flows", "number of bulk flows (one sender each)", flows);
    cmd.AddValue("rate", "bottleneck rate (ns-3 DataRate)", rate);
    cmd.AddValue("rtt", "round-trip propagation delay, ms", rttMs);
    cmd.AddValue("duration", "simulated seconds", durationS);
    std::string qdisc = "none";
    std::string tbfRate = "100Mbps";
    uint32_t tbfBurst = 32768;
    uint32_t tbfLimit = 250000;
    std::string tbfChild = "fifo";
    cmd.AddValue("qdisc", "bottleneck queue discipline: none (drop-tail device queue), tbf or fq_codel", qdisc);
    cmd.AddValue("tbfRate", "tbf rate (ns-3 DataRate)", tbfRate);
    cmd.AddValue("tbfBurst", "tbf bucket, bytes", tbfBurst);
    cmd.AddValue("tbfLimit", "tbf limit (its FIFO child's size), bytes", tbfLimit);
    cmd.AddValue("tbfChild", "tbf's child: fifo or fq_codel", tbfChild);
    cmd.Parse(argc, argv);
    if (qdisc != "none" && qdisc != "tbf" && qdisc != "fq_codel")
    {
        std::fprintf(stderr, "error: --qdisc=%s: expected none, tbf or fq_codel\n", qdisc.c_str());
        return 2;
    }
    if (tbfChild != "fifo" && tbfChild != "fq_codel")
    {
        std::fprintf(stderr, "error: --tbfChild=%s: expected fifo or fq_codel\n", tbfChild.c_str());
        return 2;
    }

    const std::string tcpType = cc == "bbr" ? "ns3::TcpBbr" : "ns3::TcpCubic";
    Set("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(tcpType)));
    Set("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Set("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Set("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Set("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
    Set("ns3::TcpSocket::SndBufSize", UintegerValue(4194304));
    Set("ns3::TcpSocket::RcvBufSize", UintegerValue(6291456));
    Set("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Set("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Set("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Set("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Set("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Set("ns3::TcpSocketState::EnablePacing", BooleanValue(cc == "bbr"));
    Set("ns3::TcpCubic::Beta", DoubleValue(0.7));
    Set("ns3::TcpCubic::FastConvergence", BooleanValue(true));
    Set("ns3::TcpCubic::TcpFriendliness", BooleanValue(true));
    Set("ns3::TcpCubic::HyStart", BooleanValue(true));

    const DataRate bottleneck(rate);
    const DataRate access(bottleneck.GetBitRate() * 10);
    const Time oneWay = MicroSeconds(static_cast<int64_t>(rttMs * 500.0) - 2);
    const double bdpBytes = bottleneck.GetBitRate() / 8.0 * rttMs / 1000.0;
    const uint32_t bdpPackets = std::max<uint32_t>(1, static_cast<uint32_t>(bdpBytes / 1514.0 + 0.5));

    NodeContainer senders;
    senders.Create(flows);
    NodeContainer routers;
    routers.Create(2);
    NodeContainer receiver;
    receiver.Create(1);

    PointToPointHelper accessLink;
    accessLink.SetDeviceAttribute("DataRate", DataRateValue(access));
    accessLink.SetChannelAttribute("Delay", TimeValue(MicroSeconds(1)));
    accessLink.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize("100000p")));
    PointToPointHelper bottleneckLink;
    bottleneckLink.SetDeviceAttribute("DataRate", DataRateValue(bottleneck));
    bottleneckLink.SetChannelAttribute("Delay", TimeValue(oneWay));
    bottleneckLink.SetQueue("ns3::DropTailQueue",
                            "MaxSize",
                            QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, qdisc == "none" ? bdpPackets : 1)));

    InternetStackHelper stack;
    stack.InstallAll();
    Ipv4AddressHelper addr;
    std::vector<NetDeviceContainer> devices;
    for (uint32_t i = 0; i < flows; i++)
    {
        devices.push_back(accessLink.Install(senders.Get(i), routers.Get(0)));
    }
    devices.push_back(bottleneckLink.Install(routers.Get(0), routers.Get(1)));
    devices.push_back(accessLink.Install(routers.Get(1), receiver.Get(0)));
    Ipv4InterfaceContainer last;
    for (size_t i = 0; i < devices.size(); i++)
    {
        std::string base = "10." + std::to_string(1 + i / 250) + "." + std::to_string(i % 250) + ".0";
        addr.SetBase(base.c_str(), "255.255.255.0");
        last = addr.Assign(devices[i]);
    }
    // No qdisc: the device's drop-tail queue is the only buffer, as tcplab's pfifo.
    // (Address assignment installs ns-3's default fq_codel root qdisc; remove it after.)
    TrafficControlHelper tch;
    for (auto& d : devices)
    {
        tch.Uninstall(d);
    }
    // The bottleneck port r1 -> r2 (r1's device on the bottleneck link).
    Ptr<NetDevice> bottleneckPort = devices[flows].Get(0);
    // fq_codel with Linux's defaults (see the top of this file); as the root or as tbf's child.
    auto fqCodel = [](TrafficControlHelper& h, bool root, uint16_t parent, uint16_t classId) {
#define FQ_CODEL_ARGS                                                                                  \
    "ns3::FqCoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize("10240p")), "Flows", UintegerValue(1024), \
        "Target", StringValue("5ms"), "Interval", StringValue("100ms"), "DropBatchSize", UintegerValue(64), \
        "UseEcn", BooleanValue(false), "Perturbation", UintegerValue(0)
        if (root)
        {
            h.SetRootQueueDisc(FQ_CODEL_ARGS);
        }
        else
        {
            h.AddChildQueueDisc(parent, classId, FQ_CODEL_ARGS);
        }
#undef FQ_CODEL_ARGS
    };
    if (qdisc == "tbf")
    {
        TrafficControlHelper tbf;
        const uint16_t handle = tbf.SetRootQueueDisc("ns3::TbfQueueDisc",
                                                     "Rate", DataRateValue(DataRate(tbfRate)),
                                                     "Burst", UintegerValue(tbfBurst),
                                                     "PeakRate", DataRateValue(DataRate("0bps")),
                                                     "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, tbfLimit)));
        if (tbfChild == "fq_codel")
        {
            const auto classes = tbf.AddQueueDiscClasses(handle, 1, "ns3::QueueDiscClass");
            fqCodel(tbf, false, handle, classes[0]);
        }
        QueueDiscContainer installed = tbf.Install(bottleneckPort);
        if (tbfChild == "fq_codel")
        {
            // A child has no device to take its quantum from (CheckConfig would refuse a
            // quantum of 0): give it the device MTU, as the root fq_codel gets.
            installed.Get(0)->GetQueueDiscClass(0)->GetQueueDisc()->GetObject<FqCoDelQueueDisc>()->SetQuantum(
                bottleneckPort->GetMtu());
        }
    }
    else if (qdisc == "fq_codel")
    {
        TrafficControlHelper fq;
        fqCodel(fq, true, 0, 0);
        fq.Install(bottleneckPort);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const uint16_t port = 5001;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sink = sinkHelper.Install(receiver.Get(0));
    sink.Start(Seconds(0));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(last.GetAddress(1), port));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    bulk.SetAttribute("SendSize", UintegerValue(65536));
    ApplicationContainer apps = bulk.Install(senders);
    apps.Start(Seconds(0));

    Simulator::Stop(Seconds(durationS));
    Simulator::Run();
    const uint64_t rx = DynamicCast<PacketSink>(sink.Get(0))->GetTotalRx();
    const uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();

    std::printf("{\"ns3_version\":\"3.44\",\"qdisc\":\"%s\",\"cc\":\"%s\",\"flows\":%u,\"goodput_bps\":%.1f,\"sim_s\":%g,"
                "\"events\":%llu,\"bdp_packets\":%u,\"unset_attributes\":[",
                qdisc == "tbf" ? ("tbf/" + tbfChild).c_str() : qdisc.c_str(), cc.c_str(), flows, rx * 8.0 / durationS, durationS,
                static_cast<unsigned long long>(events), bdpPackets);
    for (size_t i = 0; i < g_unset.size(); i++)
    {
        std::printf("%s\"%s\"", i ? "," : "", g_unset[i].c_str());
    }
    std::printf("]}\n");
    return 0;
}
