// ns-3 peer of tcplab's benchmark scenarios 1-4, 6a/6b and 9 (see bench/src/main.rs).
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
// Issue 27: tcplab's scenario 4 (bench/src/main.rs, `short_flows`): many finite flows from
// one sender host into one receiver:
//   --flows=1000 --senders=1 --flowBytes=100000 --spread=10 --duration=12
// `flows` BulkSendApplications (MaxBytes = flowBytes, then the socket closes: FIN) on the
// one sender, flow i starting at spread * i / flows (integer ns, as the Rust), all into the
// one PacketSink of the receiver, as tcplab's 1000 flows from s0 to dst; the same dumbbell
// (1-BDP drop-tail bottleneck), each flow its own connection with a SYN handshake and a FIN
// in both. Each flow binds its own local port (10000 + i) so the sink can tell them apart:
// flows_done counts the flows whose every byte reached the sink before the end, fct_* is
// start -> last byte at the sink (tcplab's flows_done counts flows whose last byte was
// acknowledged at the sender, half an RTT later). Goodput is the same quantity on both
// sides (all bytes received x 8 / duration) and the same number when every flow finishes.
// What differs and cannot be removed: ns-3's receiver has no quick-ACK mode. Linux (and
// tcplab) ACK each of a connection's first segments at once (tcp_incr_quickack(), up to 16),
// so slow start doubles from 10 segments: 10 + 20 + 40 covers a 100 KB flow (70 segments)
// in 3 rounds. ns-3 ACKs every second segment from the start (DelAckCount 2), so its
// byte-counting slow start grows ~1.9x per round and leaves 5 segments for a 4th: a flow
// takes one RTT more (last byte at the sink 90.8 ms after its start; tcplab acknowledges it
// 80.8 ms after, so it reached the sink at ~70.8 ms) and ns-3 sends fewer ACKs (DelAckCount
// 1 would give 3 rounds, and an ACK per segment for the whole flow where Linux delays after
// the first 16). ns-3's receive buffer starts at its
// 6 MB maximum where Linux's starts at tcp_rmem[1] = 128 KB and autotunes: a 100 KB flow
// outgrows neither.
//
// Output: one JSON line with the goodput (bytes the sink received x 8 / duration, as
// tcplab-bench's sum of bytes_received x 8 / duration), the simulated seconds and ns-3's
// event count. The harness (bench/run.py) measures wall time and peak memory around the
// process.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
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

// Per-flow bytes at the sink and the time the last byte arrived (--flowBytes > 0): flow i
// sends from local port kFirstPort + i.
static const uint16_t kFirstPort = 10000;
static uint64_t g_flowBytes = 0;
static std::vector<uint64_t> g_flowRx;
static std::vector<Time> g_flowDone;

static void
SinkRx(Ptr<const Packet> p, const Address& from, const Address&)
{
    const uint16_t src = InetSocketAddress::ConvertFrom(from).GetPort();
    if (src < kFirstPort || src - kFirstPort >= g_flowRx.size())
    {
        return;
    }
    const size_t i = src - kFirstPort;
    g_flowRx[i] += p->GetSize();
    if (g_flowRx[i] >= g_flowBytes && g_flowDone[i].IsNegative())
    {
        g_flowDone[i] = Simulator::Now();
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
    uint32_t nSenders = 0;
    uint64_t flowBytes = 0;
    double spreadS = 0.0;
    cmd.AddValue("senders", "sender hosts (0: one per flow); flow i runs on sender i % senders", nSenders);
    cmd.AddValue("flowBytes", "bytes each flow sends, then closes (0: unlimited)", flowBytes);
    cmd.AddValue("spread", "flow i starts at spread * i / flows, seconds", spreadS);
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
    if (nSenders == 0 || nSenders > flows)
    {
        nSenders = flows;
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
    senders.Create(nSenders);
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
    for (uint32_t i = 0; i < nSenders; i++)
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
    Ptr<NetDevice> bottleneckPort = devices[nSenders].Get(0);
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
    bulk.SetAttribute("MaxBytes", UintegerValue(flowBytes));
    bulk.SetAttribute("SendSize", UintegerValue(65536));
    // Flow i: on sender i % senders, from local port kFirstPort + i (the sink tells the flows
    // apart by it), starting at spread * i / flows in integer ns (bench/src/main.rs).
    const uint64_t spreadNs = static_cast<uint64_t>(spreadS * 1e9 + 0.5);
    std::vector<Time> starts(flows);
    for (uint32_t i = 0; i < flows; i++)
    {
        bulk.SetAttribute("Local", AddressValue(InetSocketAddress(Ipv4Address::GetAny(), kFirstPort + i)));
        ApplicationContainer app = bulk.Install(senders.Get(i % nSenders));
        starts[i] = NanoSeconds(static_cast<int64_t>(spreadNs * i / flows));
        app.Start(starts[i]);
    }

    // Per flow: bytes at the sink and when the last one arrived (finite flows only).
    g_flowBytes = flowBytes;
    g_flowRx.assign(flows, 0);
    g_flowDone.assign(flows, Time(-1));
    if (flowBytes > 0)
    {
        sink.Get(0)->TraceConnectWithoutContext("RxWithAddresses", MakeCallback(&SinkRx));
    }

    Simulator::Stop(Seconds(durationS));
    Simulator::Run();
    const uint64_t rx = DynamicCast<PacketSink>(sink.Get(0))->GetTotalRx();
    const uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();

    uint32_t flowsDone = 0;
    std::vector<double> fcts;
    for (uint32_t i = 0; i < flows; i++)
    {
        if (!g_flowDone[i].IsNegative())
        {
            flowsDone++;
            fcts.push_back((g_flowDone[i] - starts[i]).GetSeconds());
        }
    }
    std::sort(fcts.begin(), fcts.end());
    double fctMean = 0;
    for (double f : fcts)
    {
        fctMean += f;
    }
    fctMean = fcts.empty() ? 0 : fctMean / fcts.size();
    const double fctP50 = fcts.empty() ? 0 : fcts[fcts.size() / 2];
    const double fctMax = fcts.empty() ? 0 : fcts.back();

    std::printf("{\"ns3_version\":\"3.44\",\"qdisc\":\"%s\",\"cc\":\"%s\",\"flows\":%u,\"senders\":%u,\"goodput_bps\":%.1f,"
                "\"rx_bytes\":%llu,\"sim_s\":%g,\"events\":%llu,\"bdp_packets\":%u,",
                qdisc == "tbf" ? ("tbf/" + tbfChild).c_str() : qdisc.c_str(), cc.c_str(), flows, nSenders, rx * 8.0 / durationS,
                static_cast<unsigned long long>(rx), durationS, static_cast<unsigned long long>(events), bdpPackets);
    if (flowBytes > 0)
    {
        std::printf("\"flow_bytes\":%llu,\"flows_done\":%u,\"fct_mean_s\":%.6f,\"fct_p50_s\":%.6f,\"fct_max_s\":%.6f,",
                    static_cast<unsigned long long>(flowBytes), flowsDone, fctMean, fctP50, fctMax);
    }
    std::printf("\"unset_attributes\":[");
    for (size_t i = 0; i < g_unset.size(); i++)
    {
        std::printf("%s\"%s\"", i ? "," : "", g_unset[i].c_str());
    }
    std::printf("]}\n");
    return 0;
}
