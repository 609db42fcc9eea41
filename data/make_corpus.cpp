// make_corpus.cpp — writes shardlab's default training corpus to stdout.
//
// The corpus is "lab notes": short present-tense stories about people who
// train a model on a small cluster — ranks, GPUs, shards, gradients, losses
// and checkpoints. Every word comes from the tables below; nothing is copied
// from outside. The text is made to be learnable by a tiny byte-level GPT:
// a few hundred words, recurring phrases, subject-verb agreement, numbers
// written as digits whose arithmetic is always right, dialogue, log tables,
// wrapped lines and blank lines between paragraphs.
//
// Deterministic on every platform: a fixed seed, splitmix64 and integer
// arithmetic only (no <random> distributions, no floating point). Each
// expression draws at most one random number, because C++ leaves the order
// in which the operands of '+' are evaluated to the compiler (g++ and clang++
// produce the same bytes).
//
//   g++ -O2 -std=c++17 data/make_corpus.cpp -o /tmp/make_corpus
//   /tmp/make_corpus > data/corpus.txt
//
// Optional argument: the target size in bytes (default 1800000). Output stops
// at the end of the first note that reaches it.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// ---------------------------------------------------------------- randomness
uint64_t g_state = 0x5eed5a4d1ab2024ULL;

uint64_t next_u64() {  // splitmix64
    uint64_t z = (g_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
int rnd(int n) { return static_cast<int>(next_u64() % static_cast<uint64_t>(n)); }
int range(int lo, int hi) { return lo + rnd(hi - lo + 1); }  // inclusive
bool chance(int percent) { return rnd(100) < percent; }
template <class T> const T& pick(const std::vector<T>& v) { return v[rnd(static_cast<int>(v.size()))]; }

// ---------------------------------------------------------------- text helpers
std::string S(long long v) { return std::to_string(v); }

std::string cap(std::string s) {
    if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
    return s;
}

// "1 shard", "3 shards"
std::string count(long long n, const std::string& one, const std::string& many) {
    return S(n) + " " + (n == 1 ? one : many);
}
std::string count(long long n, const std::string& one) { return count(n, one, one + "s"); }

// hundredths as "3.07"
std::string fix2(int h) {
    std::string frac = S(h % 100);
    if (frac.size() < 2) frac = "0" + frac;
    return S(h / 100) + "." + frac;
}

std::string pad_left(const std::string& s, size_t w) {
    return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

// ---------------------------------------------------------------- people
struct Person {
    std::string name, subj, obj, poss;
    bool plural;  // "they" takes the plural verb form
};

const std::vector<Person> kPeople = {
    {"Ada", "she", "her", "her", false},     {"Bruno", "he", "him", "his", false},
    {"Chen", "she", "her", "her", false},    {"Dara", "she", "her", "her", false},
    {"Emil", "he", "him", "his", false},     {"Farah", "she", "her", "her", false},
    {"Gus", "he", "him", "his", false},      {"Hana", "she", "her", "her", false},
    {"Ivo", "he", "him", "his", false},      {"Juno", "they", "them", "their", true},
    {"Kai", "he", "him", "his", false},      {"Lena", "she", "her", "her", false},
    {"Milo", "he", "him", "his", false},     {"Nia", "she", "her", "her", false},
    {"Omar", "he", "him", "his", false},     {"Pia", "she", "her", "her", false},
    {"Quinn", "they", "them", "their", true}, {"Rosa", "she", "her", "her", false},
    {"Sami", "he", "him", "his", false},     {"Tove", "she", "her", "her", false},
};

// A name is a singular subject ("Juno checks"); the pronoun agrees with
// itself: "she checks", "they check".
std::string agree(const Person& p, const std::string& sing, const std::string& plur) {
    return p.plural ? plur : sing;
}
std::string pv(const Person& p, const std::string& sing, const std::string& plur) {
    return p.subj + " " + agree(p, sing, plur);
}

// ---------------------------------------------------------------- word tables
const std::vector<std::string> kNodes = {"owl",  "wren",  "heron", "finch", "lark",
                                         "crane", "kite", "robin", "swift", "egret"};
const std::vector<std::string> kDays = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                        "Friday", "Saturday", "Sunday"};
const std::vector<std::string> kTimes = {"morning", "afternoon", "evening", "night"};
const std::vector<std::string> kMoods = {
    "The lab is quiet.", "The lab is cold, and the fans are loud.",
    "Rain taps on the window.", "The coffee is still warm.",
    "The coffee is cold again.", "Someone has left a plant on the rack.",
    "The lights hum over the racks.", "It is a slow day, which is good.",
    "The old printer is jammed again.", "The whiteboard is full of arrows."};
const std::vector<std::string> kMorals = {
    "A slow rank makes every rank slow.",
    "Every byte that is sent must be received.",
    "Small steps are safer than big ones.",
    "Save a checkpoint before you change the learning rate.",
    "When the loss goes up, look at the gradient first.",
    "Every shard matters, even the small ones.",
    "Count the bytes before you blame the network.",
    "Warm up the learning rate; cold starts break things.",
    "A barrier is only as fast as the last rank.",
    "Write the numbers down. Memory is not a log.",
    "If two ranks disagree, one of them has a bug.",
    "The sum must be the same on every rank.",
    "Check the shapes first. Then check them again.",
    "A quiet log is not always a good log.",
    "Read the error from the first rank that failed.",
};

// question and answer pairs for the teaching dialogues
struct QA { std::string q, a; };
const std::vector<QA> kQA = {
    {"What is a rank?",
     "A rank is one process in the job. Each rank has a number, and the first one is rank 0."},
    {"What is a shard?",
     "A shard is one piece of the weights. No single rank holds all of them."},
    {"What does all-reduce do?",
     "It adds up the gradients from every rank, and then every rank gets the same sum."},
    {"What does reduce-scatter do?",
     "It adds up the chunks, and each rank keeps one summed chunk."},
    {"What does all-gather do?",
     "Each rank shares its chunk, and every rank ends up with all of them."},
    {"Why do we clip the gradient?",
     "So that one bad step cannot throw the weights far away."},
    {"What is the loss?",
     "It tells us how surprised the model is by the next byte. Lower is better."},
    {"Why does the loss start at 5.55?",
     "There are 256 bytes, and ln 256 is 5.55. At the start every byte is equally likely."},
    {"What is a checkpoint?",
     "A copy of the weights and the optimizer state, saved to disk so the run can start again."},
    {"What is a barrier?",
     "A place where every rank waits until all the others arrive."},
    {"What is the learning rate?",
     "It is the size of each step. Too big and the loss jumps; too small and nothing moves."},
    {"What is data parallel?",
     "Every rank holds the whole model and reads a different part of the data."},
    {"What is tensor parallel?",
     "Each rank holds a slice of every layer, and the ranks talk inside each layer."},
    {"What is pipeline parallel?",
     "Each rank holds a few layers, and the batch flows through them like water through pipes."},
    {"Why is the gradient so large?",
     "Maybe the learning rate is too high. Maybe a batch is strange. Look at the log."},
    {"Why does every rank wait?",
     "Because the all-reduce needs every rank. The slowest one sets the pace."},
    {"What is a token here?",
     "One byte. The model reads bytes, so there are 256 tokens."},
    {"What is warmup?",
     "We start with a small learning rate and raise it step by step, so the first steps are gentle."},
};

// Story kinds: 0 slow rank, 1 ring all-reduce, 2 sharding, 3 loss spike,
// 4 checkpoints, 5 warmup, 6 failed rank, 7 counting bytes, 8 teaching,
// 9 pipeline, 10 tensor parallel, 11 memory budget.
const int kKinds = 12;
struct Title { int kind; std::string text; };
const std::vector<Title> kTitles = {
    {0, "The slow rank"},          {0, "Waiting for one rank"},      {0, "A hot GPU"},
    {1, "The ring all-reduce"},    {1, "Passing chunks around"},     {1, "The sum on every rank"},
    {2, "Sharding the table"},     {2, "Cutting the weights"},       {2, "Where the rows live"},
    {3, "When the loss went up"},  {3, "A gradient that grew"},      {3, "The spike"},
    {4, "Checkpoints"},            {4, "A full disk"},               {4, "Saving the shards"},
    {5, "Warmup"},                 {5, "Choosing a learning rate"},  {5, "Too big a step"},
    {6, "The missing shard"},      {6, "A rank that stopped"},       {6, "Starting again"},
    {7, "Counting bytes"},         {7, "Who sends what"},            {7, "The bytes add up"},
    {8, "A new student"},          {8, "Questions at the whiteboard"}, {8, "Teaching the basics"},
    {9, "The pipeline bubble"},    {9, "Stages and ticks"},          {9, "Micro-batches"},
    {10, "Splitting a matrix"},    {10, "Columns on every rank"},    {10, "Tensor parallel"},
    {11, "Where the memory goes"}, {11, "Counting megabytes"},       {11, "Sharding the optimizer"},
};

// ---------------------------------------------------------------- output
std::string g_out;

// Wrap a paragraph at 72 columns and append it followed by a blank line.
void para(const std::string& text) {
    const size_t width = 72;
    size_t line_len = 0, i = 0;
    while (i < text.size()) {
        size_t j = text.find(' ', i);
        if (j == std::string::npos) j = text.size();
        std::string word = text.substr(i, j - i);
        if (!word.empty()) {
            if (line_len > 0 && line_len + 1 + word.size() > width) {
                g_out += '\n';
                line_len = 0;
            }
            if (line_len > 0) { g_out += ' '; ++line_len; }
            g_out += word;
            line_len += word.size();
        }
        i = j + 1;
    }
    g_out += "\n\n";
}

// A paragraph built sentence by sentence.
struct Para {
    std::string text;
    Para& operator<<(const std::string& sentence) {
        if (!text.empty()) text += ' ';
        text += sentence;
        return *this;
    }
    void emit() { if (!text.empty()) para(text); text.clear(); }
};

// ---------------------------------------------------------------- story state
struct Story {
    Person a, b;            // a is the lead, b the helper
    std::string node;       // one named node
    int nodes, gpn, ranks;  // nodes, GPUs per node, ranks = nodes * gpn
    int layers, shards;
    int step;               // current training step
    int loss;               // hundredths
    int floor_loss;         // the loss this run is heading towards
    int lr;                 // learning rate in units of 0.00001
};

std::string rank_name(int r) { return "rank " + S(r); }
std::string lr_str(int lr) {  // lr in units of 0.00001 -> "0.00300"
    std::string s = S(lr);
    while (s.size() < 5) s = "0" + s;
    return "0." + s;
}

// Advance training by some steps (a multiple of 50) and lower the loss
// towards the floor: each 100 steps close 12% to 26% of the gap.
void train_some(Story& st, int steps) {
    st.step += steps;
    for (int k = 0; k < steps; k += 100) {
        int gap = st.loss - st.floor_loss;
        int drop = gap * range(12, 26) / 100;
        if (drop < 1 && gap > 0) drop = 1;
        st.loss -= drop;
    }
}

// "Ada and Bruno" as a plural subject
std::string both(const Story& st) { return st.a.name + " and " + st.b.name; }

// ---------------------------------------------------------------- paragraphs
void intro(Story& st) {
    Para p;
    if (chance(50)) {
        // One random draw per statement: the order in which the operands of
        // '+' are evaluated is unspecified, and must not change the output.
        std::string day = pick(kDays);
        std::string time = pick(kTimes);
        p << "It is " + day + " " + time + ". " + pick(kMoods);
    }
    switch (rnd(3)) {
        case 0:
            p << st.a.name + " starts a new run on " +
                     count(st.nodes, "node") + ".";
            break;
        case 1:
            p << st.a.name + " has " + count(st.nodes, "node") +
                     " for the day, and node " + st.node + " is one of them.";
            break;
        default:
            p << both(st) + " share a job on " + count(st.nodes, "node") + " today.";
            break;
    }
    p << "Each node has " + count(st.gpn, "GPU") + ", so the job has " +
             count(st.ranks, "rank") + ", numbered 0 " + (st.ranks == 2 ? "and" : "to") + " " +
             S(st.ranks - 1) + ".";
    if (chance(60)) {
        p << "The model has " + count(st.layers, "layer") + " and reads " +
                 "128 bytes at a time.";
    }
    if (chance(50)) {
        int per = st.layers / st.shards;
        p << "The weights are cut into " + count(st.shards, "shard") + ", so each shard holds " +
                 count(per, "layer") + ".";
    }
    p.emit();
}

void para_slow_rank(Story& st) {
    Para p;
    if (st.step == 0) train_some(st, range(1, 3) * 100);
    int slow = rnd(st.ranks);
    int fast = range(90, 140), extra = range(10, 90);
    p << "At step " + S(st.step) + ", " + st.a.name + " notices" +
             " that " + rank_name(slow) + " is slow.";
    p << "The other ranks finish a step in " + S(fast) + " ms, but " + rank_name(slow) +
             " needs " + S(fast + extra) + " ms.";
    p << "So every rank waits " + S(extra) + " ms at the all-reduce, and every step takes " +
             S(fast + extra) + " ms.";
    p.emit();
    Para q;
    int cause = rnd(3);
    if (cause == 0) {
        int temp = range(82, 95);
        q << cap(pv(st.a, "looks", "look")) + " at the GPU on " + rank_name(slow) + ". It runs at " +
                 S(temp) + " degrees, and the others run at " + S(temp - range(15, 25)) + ".";
        q << st.b.name + " cleans the fan, and the GPU cools down.";
    } else if (cause == 1) {
        int jobs = range(2, 4);
        q << cap(pv(st.a, "finds", "find")) + " " + count(jobs, "other job") + " on node " + st.node +
                 ", all on the same GPU as " + rank_name(slow) + ".";
        q << st.b.name + " moves them to another node.";
    } else {
        q << cap(pv(st.a, "checks", "check")) + " the data loader. " + cap(rank_name(slow)) +
                 " reads its batch from a slow disk.";
        q << both(st) + " copy the data to a local disk.";
    }
    q << "Now every step takes " + S(fast) + " ms again, and the run saves " + S(extra) +
             " ms per step.";
    if (chance(50)) {
        int steps = range(2, 9) * 100;
        q << "Over " + S(steps) + " steps that is " + S(steps * extra) + " ms, or about " +
                 S(steps * extra / 1000) + " seconds.";
    }
    q.emit();
    train_some(st, range(1, 4) * 100);
}

void para_ring(Story& st) {
    Para p;
    int n = st.ranks;
    int chunk = range(2, 24) * 4;
    int total = chunk * n;
    p << "The gradient on each rank is " + S(total) + " bytes.";
    p << "For the ring all-reduce, every rank cuts it into " + count(n, "chunk") + " of " +
             S(chunk) + " bytes.";
    if (n <= 4) {
        std::string s;
        for (int r = 0; r < n; ++r) {
            int to = (r + 1) % n;
            std::string part = rank_name(r) + " sends " + S(chunk) + " bytes to " + rank_name(to);
            if (to == 0) part = rank_name(r) + " sends " + S(chunk) + " bytes back to rank 0";
            if (r == 0) s = cap(part);
            else if (r == n - 1) s += ", and " + part;
            else s += ", " + part;
        }
        p << s + ".";
    } else {
        p << "Rank 0 sends " + S(chunk) + " bytes to rank 1, rank 1 sends " + S(chunk) +
                 " bytes to rank 2, and so on, until " + rank_name(n - 1) + " sends " + S(chunk) +
                 " bytes back to rank 0.";
    }
    p << "After " + count(n - 1, "step") + " of reduce-scatter, each rank holds one summed chunk.";
    p << "After " + count(n - 1, "more step", "more steps") +
             " of all-gather, every rank holds the full sum.";
    p.emit();
    Para q;
    q << "So each rank sends " + S(2 * (n - 1)) + " chunks of " + S(chunk) + " bytes, which is " +
             S(2 * (n - 1) * chunk) + " bytes.";
    if (chance(60)) {
        q << st.b.name + " checks the sum on rank 0 and on " +
                 rank_name(n - 1) + ". They are the same.";
    } else {
        q << st.a.name + " prints the first number of the sum on every rank.";
        std::string all = n == 2 ? std::string("Both ranks") : "All " + count(n, "rank");
        q << all + " print the same number, " + fix2(range(110, 9999)) + ".";
    }
    q.emit();
    train_some(st, range(1, 3) * 100);
}

void para_sharding(Story& st) {
    Para p;
    int s = st.shards;
    int per = range(2, 32) * 8;
    int rows = per * s;
    int cols = pick(std::vector<int>{16, 32, 64, 128});
    p << "The embedding table has " + S(rows) + " rows of " + S(cols) + " numbers.";
    p << "Split over " + count(s, "shard") + ", each shard holds " + S(per) + " rows, which is " +
             S(per * cols) + " numbers.";
    int k = rnd(s);
    p << "Shard " + S(k) + " holds rows " + S(k * per) + " to " + S(k * per + per - 1) + ".";
    p.emit();
    Para q;
    int row = k * per + rnd(per);
    q << "When a batch asks for row " + S(row) + ", " + st.a.name + " knows" +
             " where it lives: " + S(row) + " divided by " + S(per) + ", rounded down, is " + S(row / per) +
             ", so the row is on shard " + S(row / per) + ".";
    if (chance(50)) {
        q << "Each number takes 2 bytes, so one shard is " + S(per * cols * 2) +
                 " bytes and the whole table is " + S(rows * cols * 2) + " bytes.";
    } else {
        q << st.b.name + " draws the shards on the whiteboard, one box for each rank.";
    }
    q.emit();
    train_some(st, range(1, 3) * 100);
}

void para_spike(Story& st) {
    Para p;
    train_some(st, range(1, 4) * 100);
    int before = st.loss;
    int jump = before + range(60, 180);
    int gn_ok = range(8, 30), gn_bad = range(400, 999);
    p << "At step " + S(st.step) + " the loss is " + fix2(before) + ".";
    st.step += 100;
    p << "At step " + S(st.step) + " it jumps to " + fix2(jump) + ".";
    p << st.a.name + " looks at the gradient norm: it is " + fix2(gn_bad) +
             ", far above the usual " + fix2(gn_ok) + ".";
    p.emit();
    Para q;
    int newlr = st.lr / 2;
    if (chance(50)) {
        q << cap(pv(st.a, "lowers", "lower")) + " the learning rate from " + lr_str(st.lr) + " to " +
                 lr_str(newlr) + " and " + agree(st.a, "restarts", "restart") +
                 " from the checkpoint at step " + S(st.step - 100) + ".";
        st.lr = newlr;
    } else {
        q << st.b.name + " suggests clipping the gradient norm to 1.00.";
        q << both(st) + " restart from the checkpoint at step " + S(st.step - 100) + ".";
    }
    st.step -= 100;
    st.loss = before;
    train_some(st, 100);
    q << "This time the loss at step " + S(st.step) + " is " + fix2(st.loss) + ", and it keeps falling.";
    q.emit();
}

void para_checkpoint(Story& st) {
    Para p;
    int every = range(1, 5) * 100;
    int mb = range(2, 40) * 4;
    int n = st.step / every + range(1, 4);  // checkpoints written by the end of this paragraph
    train_some(st, n * every - st.step);
    p << "Every " + S(every) + " steps the run writes a checkpoint.";
    p << "Each of the " + count(st.shards, "shard") + " writes " + S(mb) + " MB, so one checkpoint takes " +
             S(mb * st.shards) + " MB.";
    p << "By step " + S(st.step) + " the run has written " + count(n, "checkpoint") +
             ", and the disk holds " + S(n * mb * st.shards) + " MB.";
    p.emit();
    Para q;
    if (chance(50) && n > 2) {
        q << st.b.name + " keeps only the last two, which take " + S(2 * mb * st.shards) + " MB.";
    } else {
        q << cap(pv(st.a, "checks", "check")) + " that every shard has written its file. " +
                 "There are " + count(st.shards, "file") + " in the folder for step " + S(st.step) +
                 ", one for each shard.";
    }
    if (chance(40)) q << "The disk on node " + st.node + " is almost full, so " + st.a.name +
                         " deletes the old runs.";
    q.emit();
}

void para_pipeline(Story& st) {
    Para p;
    int stages = pick(std::vector<int>{2, 4, 4, 8});
    int micro = range(2, 16);
    int ticks = stages + micro - 1;
    int layers = stages * range(1, 4);
    p << st.a.name + " splits a model of " + count(layers, "layer") + " into a pipeline of " +
             count(stages, "stage") + ", so each stage holds " + count(layers / stages, "layer") + ".";
    p << "The batch is cut into " + count(micro, "micro-batch", "micro-batches") + ".";
    p << "The first micro-batch needs " + count(stages, "tick") + " to pass through every stage, " +
             "and after it one more micro-batch comes out at each tick.";
    p.emit();
    Para q;
    q << "So the forward pass takes " + S(stages) + " plus " + S(micro) + " minus 1, which is " +
             count(ticks, "tick") + ".";
    q << "Each stage is busy for " + count(micro, "tick") + " and idle for " + count(stages - 1, "tick") +
             ". The idle ticks are the bubble.";
    if (chance(50)) {
        int more = micro * 2;
        q << st.b.name + " doubles the micro-batches to " + S(more) + ". Now the pass takes " +
                 count(stages + more - 1, "tick") + ", but the bubble is still only " +
                 count(stages - 1, "tick") + ".";
    } else {
        q << cap(pv(st.a, "draws", "draw")) + " the ticks as a staircase on the whiteboard.";
    }
    q.emit();
    train_some(st, range(1, 3) * 100);
}

void para_tensor(Story& st) {
    Para p;
    int tp = pick(std::vector<int>{2, 4, 4, 8});
    if (tp > st.ranks) tp = st.ranks;
    int cols = tp * range(1, 8) * 32;
    int rows = range(2, 8) * 64;
    int part = cols / tp;
    p << "One layer has a matrix of " + S(rows) + " rows and " + S(cols) + " columns.";
    p << st.a.name + " splits it by columns over " + count(tp, "rank") + ", so each rank holds " +
             S(rows) + " rows and " + S(part) + " columns, which is " + S(rows * part) + " numbers.";
    p.emit();
    Para q;
    q << "Each rank multiplies its own slice and gets " + count(part, "column") + " of the output.";
    q << "Then an all-gather joins the " + count(tp, "slice") + " into the full " + S(cols) + " columns.";
    if (chance(50)) {
        q << st.b.name + " checks one output number on every rank. It is " + fix2(range(110, 999)) +
                 " on each of them.";
    }
    q.emit();
    train_some(st, range(1, 3) * 100);
}

void para_memory(Story& st) {
    Para p;
    int mparams = range(1, 12) * st.shards;  // millions of parameters
    p << "The model has " + S(mparams) + " million parameters.";
    p << "In bf16 each weight takes 2 bytes, so the weights take " + S(2 * mparams) + " MB.";
    p << "Adam keeps two more numbers for each weight, in fp32, which is 8 bytes, or " +
             S(8 * mparams) + " MB.";
    p.emit();
    Para q;
    q << "If every rank keeps all of it, each rank needs " + S(10 * mparams) + " MB.";
    q << "With the optimizer state cut into " + count(st.shards, "shard") + ", each rank keeps only " +
             S(8 * mparams / st.shards) + " MB of it, and needs " +
             S(2 * mparams + 8 * mparams / st.shards) + " MB in all.";
    if (chance(50)) q << st.b.name + " writes the two numbers on the whiteboard and circles the smaller one.";
    q.emit();
    train_some(st, range(1, 3) * 100);
}

void para_warmup(Story& st) {
    Para p;
    int warm = pick(std::vector<int>{10, 20, 50, 100});  // divides every peak below
    int peak = st.lr;
    int each = peak / warm;
    p << "The learning rate starts at 0 and grows for " + S(warm) + " steps.";
    p << "Each step adds " + lr_str(each) + ", so at step " + S(warm) + " it reaches " + lr_str(peak) + ".";
    p << "After that it stays at " + lr_str(peak) + " and then slowly falls.";
    p.emit();
    Para q;
    if (chance(50)) {
        q << st.b.name + " tries a run with no warmup. At step 20 the loss is " +
                 fix2(range(560, 700)) + ", higher than at the start.";
        q << both(st) + " go back to the warmup.";
    } else {
        q << st.a.name + " tries a learning rate of " + lr_str(peak * 4) +
                 ". The loss falls fast and then jumps.";
        q << cap(pv(st.a, "goes", "go")) + " back to " + lr_str(peak) + ".";
    }
    train_some(st, range(1, 4) * 100);
    q << "At step " + S(st.step) + " the loss is " + fix2(st.loss) + ".";
    q.emit();
}

void para_missing(Story& st) {
    Para p;
    int dead = rnd(st.ranks);
    int stop = st.step + range(1, 5) * 50;
    p << "At step " + S(stop) + ", " + rank_name(dead) + " stops.";
    if (st.ranks == 2) p << "The other rank waits at the barrier, and nothing moves.";
    else p << "The other " + count(st.ranks - 1, "rank") + " wait at the barrier, and nothing moves.";
    if (chance(50)) p << st.a.name + " reads the log of " + rank_name(dead) +
                         ": it ran out of memory.";
    else p << st.a.name + " reads the log of " + rank_name(dead) +
              ": node " + st.node + " lost its network for a moment.";
    p.emit();
    Para q;
    int last = (stop / 100) * 100;
    q << both(st) + " restart the job from the last checkpoint, at step " + S(last) + ".";
    q << "Every rank loads its shard again, and the run goes on.";
    if (stop > last) q << "Only " + count(stop - last, "step") + " of work are lost.";
    else q << "No steps are lost.";
    q.emit();
    st.step = stop;
    train_some(st, range(1, 3) * 100);
}

void para_bytes(Story& st) {
    Para p;
    int a = rnd(st.ranks), b = (a + 1 + rnd(st.ranks - 1)) % st.ranks;
    int held = range(1, 30) * 4, sent = range(1, 30) * 4;
    p << cap(rank_name(a)) + " sends " + S(sent) + " bytes to " + rank_name(b) + ".";
    p << cap(rank_name(b)) + " already holds " + S(held) + " bytes, so now it holds " +
             S(held + sent) + " bytes.";
    if (st.ranks > 2) {
        int c = b;
        while (c == b || c == a) c = rnd(st.ranks);
        int more = range(1, 20) * 4;
        p << "Then " + rank_name(c) + " sends " + S(more) + " bytes to " + rank_name(b) + ", and " +
                 rank_name(b) + " holds " + S(held + sent + more) + " bytes.";
    }
    p.emit();
    Para q;
    int msgs = range(2, 12), size = range(1, 16) * 8;
    q << st.a.name + " counts the messages: " + count(msgs, "message") +
             " of " + S(size) + " bytes each, which is " + S(msgs * size) + " bytes.";
    if (chance(50)) q << "The log says the same, so the count is right.";
    else q << st.b.name + " counts again and " + "gets" +
              " " + S(msgs * size) + " too.";
    q.emit();
    train_some(st, range(1, 3) * 100);
}

void para_teach(Story& st) {
    Para p;
    p << st.b.name + " is new to the lab, and " + st.a.name + " is" +
             " showing " + st.b.obj + " the cluster.";
    p.emit();
    int n = range(2, 3);
    int first = rnd(static_cast<int>(kQA.size()));
    for (int i = 0; i < n; ++i) {
        const QA& qa = kQA[(first + i * 7) % kQA.size()];
        para("\"" + qa.q + "\" asks " + st.b.name + ".");
        std::string answer = qa.a;  // a quoted statement ends in a comma before "says"
        if (answer.back() == '.') answer.back() = ',';
        para("\"" + answer + "\" says " + st.a.name + ".");
    }
    train_some(st, range(1, 3) * 100);
}

void dialogue(Story& st) {
    switch (rnd(4)) {
        case 0:
            para("\"Is the loss still going down?\" asks " + st.b.name + ".");
            para("\"Yes,\" says " + st.a.name + ". \"It is " + fix2(st.loss) +
                 " at step " + S(st.step) + ".\"");
            break;
        case 1:
            para("\"How many ranks do we have?\" asks " + st.b.name + ".");
            para("\"" + S(st.nodes) + " " + (st.nodes == 1 ? "node" : "nodes") + " times " + S(st.gpn) +
                 " GPUs is " + S(st.ranks) + " ranks,\" says " + st.a.name + ".");
            break;
        case 2:
            para("\"Should we stop the run?\" asks " + st.a.name + ".");
            para("\"Not yet,\" says " + st.b.name +
                 ". \"Let it run to step " + S((st.step / 100 + 5) * 100) + ".\"");
            break;
        default:
            para("\"Which rank is the slowest?\" asks " + st.b.name + ".");
            para("\"" + cap(rank_name(rnd(st.ranks))) + ", as always,\" says " +
                 st.a.name + " with a smile.");
            break;
    }
}

void log_block(Story& st) {
    Para p;
    p << st.a.name + " copies the last lines of the log into the notes:";
    p.emit();
    int lines = range(3, 6);
    int ms = range(90, 160);
    for (int i = 0; i < lines; ++i) {
        train_some(st, 100);
        int t = ms + range(-3, 3);
        g_out += "  step " + pad_left(S(st.step), 5) + "  loss " + fix2(st.loss) + "  lr " +
                 lr_str(st.lr) + "  " + S(t) + " ms\n";
    }
    g_out += "\n";
}

void closing(Story& st) {
    Para p;
    train_some(st, range(2, 8) * 100);
    switch (rnd(3)) {
        case 0:
            p << "The run ends at step " + S(st.step) + " with a loss of " + fix2(st.loss) + ".";
            break;
        case 1:
            p << "By step " + S(st.step) + " the loss has fallen from 5.55 to " + fix2(st.loss) + ".";
            break;
        default:
            p << "At the end of the day the run is at step " + S(st.step) + ", and the loss is " +
                     fix2(st.loss) + ".";
            break;
    }
    p << st.a.name + " writes in the notebook: \"" + pick(kMorals) + "\"";
    p.emit();
}

void story(int number) {
    Story st;
    int ia = rnd(static_cast<int>(kPeople.size()));
    int ib = (ia + 1 + rnd(static_cast<int>(kPeople.size()) - 1)) % static_cast<int>(kPeople.size());
    st.a = kPeople[ia];
    st.b = kPeople[ib];
    st.node = pick(kNodes);
    do {
        st.nodes = pick(std::vector<int>{1, 2, 2, 3, 4, 4, 8});
        st.gpn = pick(std::vector<int>{1, 2, 4, 4, 8});
        st.ranks = st.nodes * st.gpn;
    } while (st.ranks < 2 || st.ranks > 16);
    st.shards = pick(std::vector<int>{2, 4, 4, 8});
    st.layers = st.shards * range(1, 4);
    st.step = 0;
    st.loss = 555;
    st.floor_loss = range(120, 190);
    st.lr = pick(std::vector<int>{100, 200, 300, 400, 600});

    const Title& title = pick(kTitles);
    g_out += "Note " + S(number) + ": " + title.text + "\n\n";

    intro(st);
    auto body = [&](int kind) {
        switch (kind) {
            case 0: para_slow_rank(st); break;
            case 1: para_ring(st); break;
            case 2: para_sharding(st); break;
            case 3: para_spike(st); break;
            case 4: para_checkpoint(st); break;
            case 5: para_warmup(st); break;
            case 6: para_missing(st); break;
            case 7: para_bytes(st); break;
            case 8: para_teach(st); break;
            case 9: para_pipeline(st); break;
            case 10: para_tensor(st); break;
            default: para_memory(st); break;
        }
    };
    body(title.kind);
    if (chance(50)) {  // a second, different kind; warmup only ever opens a run
        int second = title.kind;
        while (second == title.kind || second == 5) second = rnd(kKinds);
        body(second);
    }
    if (chance(40)) dialogue(st);
    if (chance(35)) log_block(st);
    closing(st);
    g_out += "\n";
}

}  // namespace

int main(int argc, char** argv) {
    long target = 1800000;
    if (argc > 1) target = std::atol(argv[1]);
    for (int n = 1; static_cast<long>(g_out.size()) < target; ++n) story(n);
    std::fwrite(g_out.data(), 1, g_out.size(), stdout);
    return 0;
}
