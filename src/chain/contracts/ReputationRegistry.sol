// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;

interface IIdentityRegistryView {
    function ownerOf(uint256 agentId) external view returns (address);
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);
}

/// @title ReputationRegistry
/// @notice A minimal ERC-8004 reputation registry for the devnet with the current function signatures:
/// signed fixed-point feedback values (int128 value, uint8 valueDecimals), string tags, 1-based feedback indexes
/// per (agent, client), revocation and responses. Owners and operators cannot rate their own agent.
contract ReputationRegistry {
    struct Feedback {
        int128 value;
        uint8 valueDecimals;
        bool isRevoked;
        string tag1;
        string tag2;
    }

    uint8 public constant MAX_VALUE_DECIMALS = 18;

    address private immutable _identityRegistry;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => Feedback))) private _feedback;
    mapping(uint256 agentId => mapping(address client => uint64 lastIndex)) private _lastIndex;
    mapping(uint256 agentId => address[] clients) private _clients;
    mapping(uint256 agentId => mapping(address client => bool known)) private _clientKnown;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => uint64 count))) private _responseCount;

    event NewFeedback(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        int128 value,
        uint8 valueDecimals,
        string indexed indexedTag1,
        string tag1,
        string tag2,
        string endpoint,
        string feedbackURI,
        bytes32 feedbackHash
    );
    event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex);
    event ResponseAppended(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        address indexed responder,
        string responseURI,
        bytes32 responseHash
    );

    error UnknownAgent(uint256 agentId);
    error SelfFeedback();
    error TooManyDecimals(uint8 valueDecimals);
    error BadIndex(uint64 feedbackIndex);
    error AlreadyRevoked();
    error EmptyClientList();
    error EmptyURI();

    constructor(address identityRegistry_) {
        _identityRegistry = identityRegistry_;
    }

    function getIdentityRegistry() external view returns (address) {
        return _identityRegistry;
    }

    function giveFeedback(
        uint256 agentId,
        int128 value,
        uint8 valueDecimals,
        string memory tag1,
        string memory tag2,
        string memory endpoint,
        string memory feedbackURI,
        bytes32 feedbackHash
    ) external {
        if (valueDecimals > MAX_VALUE_DECIMALS) revert TooManyDecimals(valueDecimals);
        _requireRateable(agentId);
        uint64 index = _store(agentId, value, valueDecimals, tag1, tag2);
        emit NewFeedback(agentId, msg.sender, index, value, valueDecimals, tag1, tag1, tag2, endpoint, feedbackURI, feedbackHash);
    }

    function _requireRateable(uint256 agentId) private view {
        IIdentityRegistryView registry = IIdentityRegistryView(_identityRegistry);
        try registry.ownerOf(agentId) returns (address) {} catch {
            revert UnknownAgent(agentId);
        }
        if (registry.isAuthorizedOrOwner(msg.sender, agentId)) revert SelfFeedback();
    }

    function _store(uint256 agentId, int128 value, uint8 valueDecimals, string memory tag1, string memory tag2)
        private
        returns (uint64 index)
    {
        index = _lastIndex[agentId][msg.sender] + 1;
        _feedback[agentId][msg.sender][index] = Feedback(value, valueDecimals, false, tag1, tag2);
        _lastIndex[agentId][msg.sender] = index;
        if (!_clientKnown[agentId][msg.sender]) {
            _clientKnown[agentId][msg.sender] = true;
            _clients[agentId].push(msg.sender);
        }
    }

    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external {
        if (feedbackIndex == 0 || feedbackIndex > _lastIndex[agentId][msg.sender]) revert BadIndex(feedbackIndex);
        Feedback storage fb = _feedback[agentId][msg.sender][feedbackIndex];
        if (fb.isRevoked) revert AlreadyRevoked();
        fb.isRevoked = true;
        emit FeedbackRevoked(agentId, msg.sender, feedbackIndex);
    }

    function appendResponse(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        string calldata responseURI,
        bytes32 responseHash
    ) external {
        if (bytes(responseURI).length == 0) revert EmptyURI();
        if (feedbackIndex == 0 || feedbackIndex > _lastIndex[agentId][clientAddress]) revert BadIndex(feedbackIndex);
        _responseCount[agentId][clientAddress][feedbackIndex]++;
        emit ResponseAppended(agentId, clientAddress, feedbackIndex, msg.sender, responseURI, responseHash);
    }

    function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64) {
        return _lastIndex[agentId][clientAddress];
    }

    function getClients(uint256 agentId) external view returns (address[] memory) {
        return _clients[agentId];
    }

    function getResponseCount(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (uint64)
    {
        return _responseCount[agentId][clientAddress][feedbackIndex];
    }

    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked)
    {
        if (feedbackIndex == 0 || feedbackIndex > _lastIndex[agentId][clientAddress]) revert BadIndex(feedbackIndex);
        Feedback storage fb = _feedback[agentId][clientAddress][feedbackIndex];
        return (fb.value, fb.valueDecimals, fb.tag1, fb.tag2, fb.isRevoked);
    }

    /// @notice Count and mean of the non-revoked feedback of the given clients matching the tags ("" matches any),
    /// scaled to the largest valueDecimals among them. Reverts on an empty client list: the reader chooses whom
    /// it trusts.
    function getSummary(uint256 agentId, address[] calldata clientAddresses, string calldata tag1, string calldata tag2)
        external
        view
        returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals)
    {
        if (clientAddresses.length == 0) revert EmptyClientList();
        for (uint256 pass; pass < 2; pass++) {
            int256 total;
            for (uint256 i; i < clientAddresses.length; i++) {
                uint64 last = _lastIndex[agentId][clientAddresses[i]];
                for (uint64 j = 1; j <= last; j++) {
                    Feedback storage fb = _feedback[agentId][clientAddresses[i]][j];
                    if (fb.isRevoked || !_tagsMatch(fb, tag1, tag2)) continue;
                    if (pass == 0) {
                        if (fb.valueDecimals > summaryValueDecimals) summaryValueDecimals = fb.valueDecimals;
                        count++;
                    } else {
                        total += int256(fb.value) * int256(10 ** (summaryValueDecimals - fb.valueDecimals));
                    }
                }
            }
            if (pass == 1 && count > 0) summaryValue = int128(total / int256(uint256(count)));
        }
    }

    function readAllFeedback(
        uint256 agentId,
        address[] calldata clientAddresses,
        string calldata tag1,
        string calldata tag2,
        bool includeRevoked
    )
        external
        view
        returns (
            address[] memory clients,
            uint64[] memory feedbackIndexes,
            int128[] memory values,
            uint8[] memory valueDecimals,
            string[] memory tag1s,
            string[] memory tag2s,
            bool[] memory revokedStatuses
        )
    {
        address[] memory list = clientAddresses;
        if (list.length == 0) list = _clients[agentId];
        uint256 total;
        for (uint256 i; i < list.length; i++) {
            uint64 last = _lastIndex[agentId][list[i]];
            for (uint64 j = 1; j <= last; j++) {
                Feedback storage fb = _feedback[agentId][list[i]][j];
                if ((includeRevoked || !fb.isRevoked) && _tagsMatch(fb, tag1, tag2)) total++;
            }
        }
        clients = new address[](total);
        feedbackIndexes = new uint64[](total);
        values = new int128[](total);
        valueDecimals = new uint8[](total);
        tag1s = new string[](total);
        tag2s = new string[](total);
        revokedStatuses = new bool[](total);
        uint256 k;
        for (uint256 i; i < list.length; i++) {
            uint64 last = _lastIndex[agentId][list[i]];
            for (uint64 j = 1; j <= last; j++) {
                Feedback storage fb = _feedback[agentId][list[i]][j];
                if (!((includeRevoked || !fb.isRevoked) && _tagsMatch(fb, tag1, tag2))) continue;
                clients[k] = list[i];
                feedbackIndexes[k] = j;
                values[k] = fb.value;
                valueDecimals[k] = fb.valueDecimals;
                tag1s[k] = fb.tag1;
                tag2s[k] = fb.tag2;
                revokedStatuses[k] = fb.isRevoked;
                k++;
            }
        }
    }

    function _tagsMatch(Feedback storage fb, string calldata tag1, string calldata tag2) private view returns (bool) {
        if (bytes(tag1).length > 0 && keccak256(bytes(tag1)) != keccak256(bytes(fb.tag1))) return false;
        if (bytes(tag2).length > 0 && keccak256(bytes(tag2)) != keccak256(bytes(fb.tag2))) return false;
        return true;
    }
}
